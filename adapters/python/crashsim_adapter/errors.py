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
            return "busy" if code & 0xFF in (5, 6) else "failed"
        text = str(exc).lower()
        if isinstance(exc, sqlite3.OperationalError) and (
            "locked" in text or "busy" in text
        ):
            return "busy"
    return "failed"
