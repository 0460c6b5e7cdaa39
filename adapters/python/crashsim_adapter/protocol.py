"""The protocol loop: the handshake (with the optional capabilities), the
dispatch of each operation to the role's object, the error answers and the
private channel. The canonical dump is `dump.py`, the rows' shapes `rows.py`.
"""

import json
import os
import sqlite3
import sys

from . import dump, forkserver, vfs
from .errors import Invalid, Unsupported, error_kind
from .rows import leased as _leased
from .rows import objects as _objects
from .rows import outbox as _outbox
from .rows import timers as _timers
from .settings import (
    EVENT,
    HEAD,
    RETRIED,
    Request,
    RetryPolicy,
    Settings,
)
from .sources import source_files
from .version import NAME as SDK_NAME
from .version import VERSION as SDK_VERSION

PROTOCOL = 1

STEP_METHODS = {
    "store": ("begin", "insert_event", "insert_command", "commit", "rollback"),
    "receiver": ("begin", "lookup", "apply", "commit", "rollback"),
}
WHOLE_METHOD = {"store": "append", "receiver": "handle"}
READ_METHODS = {
    "store": ("load", "heads", "commands", "pending", "mark_done", "dump"),
    "receiver": ("dump",),
}
# A store class declares the `leases` capability by defining both.
LEASES = "leases"
LEASE_METHODS = ("claim", "mark_done_leased")
# A store class declares the `retries` capability by defining both; a
# receiver may define `purge_dedup` (without it, records are kept forever).
RETRIES = "retries"
RETRY_METHODS = ("schedule_retry", "timers")
PURGE_METHOD = "purge_dedup"
# A store class declares the `backup` capability by defining the classmethod
# `backup(cls, settings, path)`: an online backup of the store's database
# into `path`, on a connection of its own. Its `dump` then also reads a
# backup (settings whose `store.path` is the backup's).
BACKUP = "backup"


_tick = 0


def now():
    """The simulated time (`tick`) of the request being answered."""
    return _tick


# ---------------------------------------------------------------- rows


def _retried(value):
    if value is None:
        return None
    if not isinstance(value, dict):
        value = dict(zip(RETRIED, value, strict=True))
    return {
        "attempts": value["attempts"],
        "next_attempt_at": value["next_attempt_at"],
        "dead_lettered": bool(value["dead_lettered"]),
    }


class _Message(dict):
    """A decoded request: a missing field is the request's fault (`invalid`)."""

    __slots__ = ()

    def __missing__(self, name):
        raise Invalid(f"the request lacks the field {name!r}")


# ---------------------------------------------------------------- roles


def _compose_append(store):
    def append(workflow_id, expected_seq, kind, payload, commands):
        store.begin()
        try:
            seq = store.insert_event(workflow_id, expected_seq, kind, payload)
            ids = [
                store.insert_command(workflow_id, seq, index, command_kind, body)
                for index, (command_kind, body) in enumerate(commands)
            ]
            store.commit()
        except BaseException:
            _quiet_rollback(store)
            raise
        return seq, ids

    return append


def _compose_handle(receiver):
    def handle(request):
        receiver.begin()
        try:
            found, result = receiver.lookup(request)
            if found == "new":
                effect_id, result = receiver.apply(request)
                receiver.commit()
                return "applied", result, effect_id
            receiver.rollback()
        except BaseException:
            _quiet_rollback(receiver)
            raise
        if found == "seen":
            return "duplicate", result, None
        if found == "conflict":
            return "conflict", None, None
        raise TypeError(f"lookup answered {found!r}, not new, seen or conflict")

    return handle


def _quiet_rollback(role):
    # The transaction may still be open; the original error is the one to report.
    try:
        role.rollback()
    except Exception:
        pass


def _store_ops(store, granularity):
    def append(r):
        commands = [(c["kind"], c["payload"]) for c in r.get("commands") or ()]
        seq, ids = whole(
            r["workflow_id"], r["expected_seq"], r["kind"], r["payload"], commands
        )
        return {"seq": seq, "command_ids": list(ids)}

    whole = getattr(store, "append", None) or _compose_append(store)
    ops = {
        "load": lambda r: {"events": _objects(EVENT, store.load(r["workflow_id"]))},
        "heads": lambda r: {"heads": _objects(HEAD, store.heads())},
        "commands": lambda r: {
            "rows": _outbox(store.commands(r["workflow_id"], r["event_seq"]))
        },
        "pending": lambda r: {"rows": _outbox(store.pending(r["limit"]))},
        "mark_done": lambda r: {
            "changed": bool(store.mark_done(r["command_id"], r.get("result")))
        },
        "append": append,
    }
    if granularity == "step":
        ops.update(
            begin=lambda r: _empty(store.begin()),
            insert_event=lambda r: {
                "seq": store.insert_event(
                    r["workflow_id"], r["expected_seq"], r["kind"], r["payload"]
                )
            },
            insert_command=lambda r: {
                "command_id": store.insert_command(
                    r["workflow_id"],
                    r["event_seq"],
                    r["index"],
                    r["kind"],
                    r["payload"],
                )
            },
            commit=lambda r: _empty(store.commit()),
            rollback=lambda r: _empty(store.rollback()),
        )
    return ops


def _receiver_ops(receiver, granularity):
    def lookup(r):
        found, result = receiver.lookup(Request(r["request"]))
        if found == "seen":
            return {"found": "seen", "result": result}
        if found in ("new", "conflict"):
            return {"found": found}
        raise TypeError(f"lookup answered {found!r}, not new, seen or conflict")

    def apply(r):
        effect_id, result = receiver.apply(Request(r["request"]))
        return {"effect_id": effect_id, "result": result}

    def handle(r):
        outcome, result, effect_id = whole(Request(r["request"]))
        if outcome == "applied":
            return {"outcome": outcome, "result": result, "effect_id": effect_id}
        if outcome == "duplicate":
            return {"outcome": outcome, "result": result}
        if outcome == "conflict":
            return {"outcome": outcome}
        raise TypeError(
            f"handle answered {outcome!r}, not applied, duplicate or conflict"
        )

    whole = getattr(receiver, "handle", None) or _compose_handle(receiver)
    ops = {"handle": handle}
    if granularity == "step":
        ops.update(
            begin=lambda r: _empty(receiver.begin()),
            lookup=lookup,
            apply=apply,
            commit=lambda r: _empty(receiver.commit()),
            rollback=lambda r: _empty(receiver.rollback()),
        )
    return ops


def _lease_ops(store):
    # Time is the request's tick (`now()`), set before the dispatch.
    return {
        "claim": lambda r: {
            "claimed": _leased(store.claim(r["owner"], r["lease_ticks"], r["limit"]))
        },
        "mark_done_leased": lambda r: {
            "changed": bool(
                store.mark_done_leased(r["command_id"], r["token"], r.get("result"))
            )
        },
    }


def _retry_ops(store):
    # Time is the request's tick (`now()`); the store decides the attempt
    # count, the delay and the dead letter; `token` only under leases.
    return {
        "schedule_retry": lambda r: {
            "retried": _retried(
                store.schedule_retry(
                    r["command_id"],
                    r.get("token"),
                    r["error"],
                    RetryPolicy(r["policy"]),
                    r.get("jitter_permille", 0),
                )
            )
        },
        "timers": lambda r: {"timers": _timers(store.timers())},
    }


def _purge_ops(receiver):
    purge = getattr(receiver, PURGE_METHOD, None)
    return {
        "purge_dedup": lambda r: {
            "removed": int(purge(r["now"], r["retention_ticks"]) if purge else 0)
        }
    }


_ROLE_OPS = {"store": _store_ops, "receiver": _receiver_ops}


def _declares(store, methods, capability):
    present = [name for name in methods if callable(getattr(store, name, None))]
    if not present:
        return False
    if len(present) < len(methods):
        missing = ", ".join(n for n in methods if n not in present)
        raise TypeError(
            f"{store.__name__} (store) has {present[0]} but lacks {missing}:"
            f" serving {capability} takes {' and '.join(methods)}"
        )
    return True


def _capabilities(classes):
    """The capabilities the classes declare: `leases` if the store class
    defines both lease methods, `retries` if it defines both timer methods
    (one without the other is refused); an adapter serving only a receiver
    declares `retries` if the receiver defines `purge_dedup`."""
    store = classes.get("store")
    if store is None:
        receiver = classes.get("receiver")
        return [RETRIES] if callable(getattr(receiver, PURGE_METHOD, None)) else []
    capabilities = []
    if _declares(store, LEASE_METHODS, LEASES):
        capabilities.append(LEASES)
    if _declares(store, RETRY_METHODS, RETRIES):
        capabilities.append(RETRIES)
    if callable(getattr(store, BACKUP, None)):
        capabilities.append(BACKUP)
    return capabilities


def _empty(_ignored):
    return {}


def _granularity(role, cls, wanted):
    missing = [
        name for name in READ_METHODS[role] if not callable(getattr(cls, name, None))
    ]
    if missing:
        raise TypeError(f"{cls.__name__} ({role}) lacks {', '.join(missing)}")
    steps = all(callable(getattr(cls, name, None)) for name in STEP_METHODS[role])
    whole = callable(getattr(cls, WHOLE_METHOD[role], None))
    if wanted is None:
        wanted = "step" if steps else "call"
    if wanted not in ("step", "call"):
        raise ValueError(f"granularity {wanted!r} is neither step nor call")
    if (wanted == "step" and not steps) or not (steps or whole):
        needs = ", ".join(STEP_METHODS[role])
        if wanted == "call":
            needs = f"{WHOLE_METHOD[role]} (or {needs})"
        raise TypeError(
            f"{cls.__name__} cannot serve {role} as {wanted}: it needs {needs}"
        )
    return wanted


def _synchronous_level(role):
    """The level `open` answers: what the role's `synchronous()` says, else
    what `PRAGMA synchronous` reads on its `connection`, else None (the
    store cannot tell: its library owns the connection). crashsim then
    judges I9 from what the store's SQLite did alone."""
    method = getattr(role, "synchronous", None)
    if callable(method):
        level = method()
        return None if level is None else int(level)
    conn = getattr(role, "connection", None)
    if conn is None:
        return None
    return int(conn.execute("PRAGMA synchronous").fetchone()[0])


# ---------------------------------------------------------------- the loop


class _Server:
    def __init__(self, classes, roles, name, version, capabilities=()):
        self.classes = classes
        self.roles = roles
        self.name = name
        self.version = version
        self.capabilities = list(capabilities)
        self.settings = None
        self.instances = {}
        self.ops = {
            "hello": self.hello,
            "setup": self.setup,
            "open": self.open,
            "dump": self.dump,
            "backup": self.backup,
            "ping": _empty,
        }
        # The role operations known before `open`: asking for one then is the
        # request's fault (`invalid`), not an unknown operation.
        self.known = set()
        for role, granularity in roles.items():
            self.known.update(_ROLE_OPS[role](None, granularity))
        if LEASES in self.capabilities:
            self.known.update(LEASE_METHODS)
        if RETRIES in self.capabilities:
            self.known.update(RETRY_METHODS)
            self.known.add(PURGE_METHOD)

    def need_settings(self):
        if self.settings is None:
            raise Invalid("no hello yet")
        return self.settings

    def hello(self, r):
        self.settings = Settings(r)
        identity = {
            "protocol": PROTOCOL,
            "name": self.name,
            "version": self.version,
            "roles": dict(self.roles),
        }
        identity["sqlite_version"] = sqlite3.sqlite_version
        identity["sdk"] = {"name": SDK_NAME, "version": SDK_VERSION}
        if self.capabilities:
            identity["capabilities"] = list(self.capabilities)
        sources = source_files()
        if sources:
            identity["sources"] = sources
        return identity

    def setup(self, r):
        settings = self.need_settings()
        for cls in self.classes.values():
            setup = getattr(cls, "setup", None)
            if setup is not None:
                setup(settings)
        return {}

    def open(self, r):
        settings = self.need_settings()
        role = r["role"]
        cls = self.classes.get(role)
        if cls is None:
            if role in _ROLE_OPS:
                raise Unsupported(f"this adapter does not serve the {role} role")
            raise Invalid(f"unknown role {role!r}")
        instance = cls(settings)
        level = _synchronous_level(instance)
        self.instances[role] = instance
        # If a process opens both roles, the last `open` owns the operations
        # both have (begin, commit, rollback).
        self.ops.update(_ROLE_OPS[role](instance, self.roles[role]))
        if role == "store" and LEASES in self.capabilities:
            self.ops.update(_lease_ops(instance))
        if role == "store" and RETRIES in self.capabilities:
            self.ops.update(_retry_ops(instance))
        if role == "receiver" and RETRIES in self.capabilities:
            self.ops.update(_purge_ops(instance))
        return {"synchronous": level}

    def backup(self, r):
        settings = self.need_settings()
        store = self.classes.get("store")
        if BACKUP not in self.capabilities or store is None:
            raise Unsupported("this adapter's store takes no backups")
        path = r.get("path")
        if not isinstance(path, str) or not path:
            raise Invalid("`backup` needs a `path`")
        part = r.get("part", 0)
        if not isinstance(part, int) or part < 0:
            raise Invalid("`backup`'s `part` is a count from 0")
        # A backup in parts (a file set copied one file at a time) answers
        # True to be asked for its next part later, with `part` (from 1).
        more = (
            store.backup(settings, path, part=part)
            if part
            else store.backup(settings, path)
        )
        return {"more": True} if more else {}

    def dump(self, r):
        settings = self.need_settings()
        path = r.get("path")
        if path is None:
            return dump.canonical(self.classes, settings)
        store = self.classes.get("store")
        if BACKUP not in self.capabilities or store is None:
            raise Unsupported("this adapter's store takes no backups")
        return dump.of_backup(store, settings, path)

    def error(self, exc, op):
        kind = error_kind(exc)
        if kind == "failed":
            import traceback

            print(f"crashsim_adapter: {op!r} failed:", file=sys.stderr)
            traceback.print_exception(exc, file=sys.stderr)
            message = f"{type(exc).__name__}: {exc}"
        else:
            message = str(exc) or kind
            if kind in ("invalid", "unsupported"):
                print(f"crashsim_adapter: {op!r}: {kind}: {message}", file=sys.stderr)
        return {"kind": kind, "message": message}

    def run(self, reader, writer):
        global _tick
        decode, encode = _DECODER.decode, _ENCODER.encode
        ops, known = self.ops, self.known
        for line in reader:
            if not line.strip():
                continue
            ident = op = None
            try:
                try:
                    request = decode(line.decode())
                    ident, op = request.get("id"), request.get("op")
                except (ValueError, AttributeError):
                    raise Invalid(
                        f"not a JSON request object: {line[:200]!r}"
                    ) from None
                _tick = request.get("tick", _tick)
                handler = ops.get(op)
                if handler is None:
                    if op in known:
                        raise Invalid(f"{op!r} before `open`")
                    raise Unsupported(f"unknown op {op!r}")
                answer = {"id": ident, "ok": handler(request)}
            except Exception as exc:
                answer = {"id": ident, "error": self.error(exc, op)}
            try:
                data = encode(answer).encode()
            except UnicodeEncodeError:
                # A lone surrogate cannot be UTF-8; its JSON escape can.
                data = json.dumps(answer, separators=(",", ":")).encode()
            except (TypeError, ValueError) as exc:
                # The operation returned something JSON cannot carry.
                error = self.error(exc, op)
                data = json.dumps({"id": ident, "error": error}).encode()
            writer.write(data + b"\n")
            writer.flush()


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# One decoder for every request (`json.loads` with a hook builds one per call).
_DECODER = json.JSONDecoder(object_pairs_hook=_Message)


def _take_channel():
    """The protocol's private stdin and stdout; fds 0 and 1 (and `sys.stdout`)
    no longer reach it, so stray output goes to stderr."""
    channel_in, channel_out = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # What user code printed before `serve` and is still in sys.stdout's
    # buffer goes to stderr too (with PYTHONUNBUFFERED it has already gone
    # to the channel: print nothing before `serve`).
    sys.stdout.flush()
    sys.stdout = sys.stderr
    return os.fdopen(channel_in, "rb"), os.fdopen(channel_out, "wb")


def serve(store=None, receiver=None, *, name=None, version="0", granularity=None):
    """Serves the given roles over stdin/stdout until stdin closes.

    `store` and `receiver` are classes (or factories) called with the
    hello's `Settings` at `open`; `setup` and `dump` are called on them as
    class methods. `granularity` is None (detect), "step", "call", or a dict
    from role to one of those. A store class that defines `claim` and
    `mark_done_leased` is served with the `leases` capability, one that
    defines `schedule_retry` and `timers` with the `retries` capability
    (then a receiver's `purge_dedup` is served too, or answers 0).
    """
    classes = {
        role: cls for role, cls in (("store", store), ("receiver", receiver)) if cls
    }
    if not classes:
        raise TypeError("serve() needs a store or a receiver")
    roles = {}
    for role, cls in classes.items():
        wanted = granularity.get(role) if isinstance(granularity, dict) else granularity
        roles[role] = _granularity(role, cls, wanted)
    capabilities = _capabilities(classes)
    if name is None:
        name = os.path.splitext(os.path.basename(sys.argv[0] or "adapter"))[0]
    capabilities.append(forkserver.CAPABILITY)
    server = _Server(classes, roles, name, str(version), capabilities)
    # Started as a fork server: this returns in each forked child, which
    # then serves one connection as a process started on its own would.
    if forkserver.requested():
        # Every child's hello lists the store's sources: found once here,
        # not by each child (some 700 path lookups per connection).
        source_files()
        forkserver.run()
    # Before the store opens any database: its connections then go through
    # crashsim's VFS (runs with power loss). In each process (a forked child
    # too): the extension counts its loads.
    vfs.load_from_environment()
    reader, writer = _take_channel()
    server.run(reader, writer)
