"""The error kinds of the protocol, and how exceptions map to them."""

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
    """The protocol's error kind for an exception."""
    if isinstance(exc, AdapterError):
        return exc.kind
    sqlite3 = sys.modules.get("sqlite3")
    if sqlite3 is not None and isinstance(exc, sqlite3.Error):
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
