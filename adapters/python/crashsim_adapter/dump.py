"""The canonical dump (docs/adapter-protocol.md): the roles' `dump` parts in
protocol form, each with its integrity, and a backup's store part."""

import os
import sqlite3

from .integrity import integrity_check
from .rows import objects, outbox, timers
from .settings import DEDUP, EFFECT, EVENT


def integrity(part, role, settings):
    """A dump part's `<role>_integrity`, or, when it has none, the SDK's own
    `PRAGMA integrity_check` of the role's database file."""
    value = part.get(f"{role}_integrity")
    if value is None:
        return integrity_check(getattr(settings, role).path)
    return value if isinstance(value, str) else "; ".join(map(str, value))


def _store_part(part):
    state = {
        "events": objects(EVENT, part["events"]),
        "outbox": outbox(part["outbox"]),
    }
    if part.get("timers"):
        state["timers"] = timers(part["timers"])
    return state


def canonical(classes, settings):
    """The state of the roles `classes` serves, read by their `dump`s."""
    store, receiver = classes.get("store"), classes.get("receiver")
    state = {}
    store_part = store.dump(settings) if store is not None else None
    receiver_part = receiver.dump(settings) if receiver is not None else None
    if store_part is not None:
        state.update(_store_part(store_part))
    if receiver_part is not None:
        state["effects"] = objects(EFFECT, receiver_part["effects"])
        state["dedup"] = objects(DEDUP, receiver_part["dedup"])
    if store_part is not None:
        state["store_integrity"] = integrity(store_part, "store", settings)
    if receiver_part is not None:
        state["receiver_integrity"] = integrity(receiver_part, "receiver", settings)
    return state


def of_backup(store, settings, path):
    """The store's part of the backup at `path`, read by the store's own
    `dump` with settings whose store path is the backup's."""
    if not os.path.exists(path):
        # Gone (a power cut took a name never made durable): a verdict on
        # the backup, never a new empty database.
        gone = "the backup's file is gone"
        return {"events": [], "outbox": [], "store_integrity": gone}
    backup = settings.with_store_path(path)
    try:
        part = store.dump(backup)
    except sqlite3.DatabaseError as error:
        if not _damaged(error):
            raise
        # A file SQLite finds damaged (a torn copy) holds no rows to judge:
        # its integrity is the verdict (I11), never the run's error.
        unreadable = f"the backup is unreadable: {error}"
        return {"events": [], "outbox": [], "store_integrity": unreadable}
    state = _store_part(part)
    state["store_integrity"] = integrity(part, "store", backup)
    return state


# SQLITE_CORRUPT and SQLITE_NOTADB: what SQLite says of a damaged file.
_DAMAGED = (11, 26)


def _damaged(error):
    """Whether `error` is SQLite finding a file damaged (not a lock, not a
    missing file, not the store's own mistake)."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _DAMAGED
    text = str(error)
    return "malformed" in text or "not a database" in text
