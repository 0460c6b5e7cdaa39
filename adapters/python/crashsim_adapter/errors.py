"""The error kinds of the protocol, and how exceptions map to them.

A store built on a library (SQLAlchemy, Django's ORM, peewee) sees SQLite's
errors wrapped in the library's own exceptions, with the `sqlite3` error as
the wrapper's cause (`raise Wrapper(...) from error`) or context (raised
while handling it). `error_kind` follows that chain to the `sqlite3` error,
so a wrapped busy or I/O error is answered `busy` or `environment`, not
`failed`.
"""

import sys


class AdapterError(Exception):
    """An error answered with its `kind`; raise a subclass."""

    kind = "failed"


class Conflict(AdapterError):
    """A stale append: the workflow's head is not `expected_seq`."""

    kind = "conflict"


class Busy(AdapterError):
    """Another connection holds the lock; nothing changed."""

    kind = "busy"


class Invalid(AdapterError):
    """The request's input is wrong for the store."""

    kind = "invalid"


class Environment(AdapterError):
    """The machine failed under the store: a full disk, an I/O error."""

    kind = "environment"


# SQLite's primary codes that are the machine's fault, not the store's:
# SQLITE_PERM, SQLITE_NOMEM, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN,
# SQLITE_NOLFS.
ENVIRONMENT_CODES = (3, 7, 10, 13, 14, 22)
ENVIRONMENT_TEXTS = (
    "database or disk is full",
    "disk i/o error",
    "unable to open database file",
    "out of memory",
)


class Unsupported(AdapterError):
    """The adapter does not know this operation."""

    kind = "unsupported"


def error_kind(exc):
    """The protocol's error kind for an exception: its own if it is one of
    ours, else that of the first `sqlite3` error in its chain, else
    `failed`."""
    inner = _decisive(exc)
    if inner is None:
        return "failed"
    if isinstance(inner, AdapterError):
        return inner.kind
    return _sqlite_kind(inner)


def _decisive(exc):
    """The first exception in `exc`'s chain that decides its kind: one of
    ours or a `sqlite3` error. The chain is `__cause__` (`raise X from e`),
    then `__context__` (raised while handling e) unless the raise hid it
    (`from None`), then `orig`, the attribute under which SQLAlchemy's
    DBAPIError keeps the driver's error. Each exception is visited once, so a
    cycle ends the walk."""
    sqlite3 = sys.modules.get("sqlite3")
    deciding = (AdapterError,) if sqlite3 is None else (AdapterError, sqlite3.Error)
    seen = set()
    while isinstance(exc, BaseException) and id(exc) not in seen:
        if isinstance(exc, deciding):
            return exc
        seen.add(id(exc))
        exc = _next_link(exc)
    return None


def _next_link(exc):
    if exc.__cause__ is not None:
        return exc.__cause__
    if exc.__context__ is not None and not exc.__suppress_context__:
        return exc.__context__
    return getattr(exc, "orig", None)


def _sqlite_kind(exc):
    import sqlite3

    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        # Primary codes SQLITE_BUSY (5) and SQLITE_LOCKED (6), extended or not.
        if code & 0xFF in (5, 6):
            return "busy"
        return "environment" if code & 0xFF in ENVIRONMENT_CODES else "failed"
    text = str(exc).lower()
    if any(words in text for words in ENVIRONMENT_TEXTS):
        return "environment"
    if isinstance(exc, sqlite3.OperationalError) and (
        "locked" in text or "busy" in text
    ):
        return "busy"
    return "failed"
