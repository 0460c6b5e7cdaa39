"""crashsim_adapter: the Python side of crashsim's adapter protocol, version 1.

crashsim (see docs/adapter-protocol.md) drives a store under test over JSON
Lines on the process's stdin and stdout, one request at a time. This module
owns that loop (the handshake, the dispatch, the error kinds, the canonical
dump), so a store written with it writes only the store operations. It uses
the standard library only.

A minimal store (see example_store.py for a complete one)::

    import crashsim_adapter as ca

    class Store:
        def __init__(self, settings):      # at `open`, role "store"
            self.connection = ca.connect(settings.store)

        @classmethod
        def setup(cls, settings): ...      # create the schema (optional)

        @classmethod
        def dump(cls, settings):           # read the tables on a new connection
            return {"events": [...], "outbox": [...], "store_integrity": "ok"}

        def load(self, workflow_id): ...   # rows as tuples or dicts
        def heads(self): ...
        def commands(self, workflow_id, event_seq): ...
        def pending(self, limit): ...
        def mark_done(self, command_id, result): ...   # -> bool
        # Step granularity: begin, insert_event (-> seq, raise ca.Conflict if
        # stale), insert_command (-> command id), commit, rollback. Or only
        # append(workflow_id, expected_seq, kind, payload, commands) ->
        # (seq, command_ids), with commands as (kind, payload) pairs: call.

    class Receiver:
        def __init__(self, settings): ...  # settings.receiver, .hotel_failure
        @classmethod
        def setup(cls, settings): ...
        @classmethod
        def dump(cls, settings):           # effects, dedup, receiver_integrity
            ...
        # Step: begin, lookup(request) -> ("new" | "seen" | "conflict", result),
        # apply(request) -> (effect_id, result), commit, rollback.
        # Or only handle(request) -> (outcome, result, effect_id): call.

    if __name__ == "__main__":
        ca.serve(store=Store, receiver=Receiver, name="my_store", version="1.0")

- `serve(store=None, receiver=None, *, name, version, granularity)` serves
  the roles given (a role left out is served by crashsim's reference). Each
  role's granularity is `step` if its class has every step method, else
  `call`; `granularity="call"` (or a dict per role) forces it. The SDK
  answers `append` and `handle` for step classes too, by composing the steps
  (rolling back on error), unless the class defines its own.
- `settings` carries the hello: `settings.store` and `settings.receiver` are
  `Database`s (`path`, `journal_mode`, `synchronous`, `busy_timeout_ms`),
  `settings.hotel_failure` a `(numerator, denominator)` pair, and
  `settings.hello` the request itself. `connect(database)` opens a sqlite3
  connection with all of them applied (autocommit, explicit transactions).
- `open` answers the level that `PRAGMA synchronous` reads back on the
  object's `connection` attribute (or what its `synchronous()` method says).
- Rows may be tuples in the protocol's field order (the order of `EVENT`,
  `HEAD`, `OUTBOX`, `EFFECT`, `DEDUP` below) or dicts.
- Errors: raise `Conflict` for a stale append, `Invalid` for bad input,
  `Busy` if you detect contention yourself; a sqlite3 error with code
  SQLITE_BUSY or SQLITE_LOCKED is answered `busy`, and any other exception
  `failed` (its traceback goes to stderr). The loop keeps serving after
  every error answer.
- `perform`, `canonical`, `core_digest`, `command_id` compute what
  crashsim's reference computes, byte for byte; `now()` is the current
  request's simulated tick (never read the wall clock).

stdout is the protocol channel and nothing else: `serve` keeps the real
channel to itself and points file descriptor 1 and `sys.stdout` at stderr,
so a stray `print()` (or a child process's output) lands in the process's
stderr file instead of breaking the run; standard input is replaced by
/dev/null for the same reason. Print nothing to stdout before `serve`.
"""

from .effect import (
    canonical,
    command_id,
    core_digest,
    decode_payload,
    fnv1a64,
    hotel_sold_out,
    perform,
)
from .errors import AdapterError, Busy, Conflict, Invalid, Unsupported, error_kind
from .protocol import PROTOCOL, now, serve
from .settings import (
    DEDUP,
    EFFECT,
    EVENT,
    HEAD,
    OUTBOX,
    SYNCHRONOUS_LEVELS,
    Database,
    Request,
    Settings,
    connect,
)

__all__ = [
    "DEDUP",
    "EFFECT",
    "EVENT",
    "HEAD",
    "OUTBOX",
    "PROTOCOL",
    "SYNCHRONOUS_LEVELS",
    "AdapterError",
    "Busy",
    "Conflict",
    "Database",
    "Invalid",
    "Request",
    "Settings",
    "Unsupported",
    "canonical",
    "command_id",
    "connect",
    "core_digest",
    "decode_payload",
    "error_kind",
    "fnv1a64",
    "hotel_sold_out",
    "now",
    "perform",
    "serve",
]
