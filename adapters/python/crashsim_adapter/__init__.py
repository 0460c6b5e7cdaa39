"""crashsim_adapter: the Python side of crashsim's adapter protocol, version 1.

crashsim (see docs/adapter-protocol.md) drives a store under test over JSON
Lines on the process's stdin and stdout, one request at a time. This module
owns that loop (the handshake, the dispatch, the error kinds, the canonical
dump), so a store written with it writes only the store operations. It uses
the standard library only.

A store is two classes (see example_store.py for a complete one)::

    import crashsim_adapter as ca

    class Store:
        def __init__(self, settings):  # at `open` with role "store"
            self.connection = ca.connect(settings.store)

        @classmethod
        def setup(cls, settings): ...  # create the schema (optional)

        @classmethod
        def dump(cls, settings):  # read the tables on a new connection
            return {"events": [...], "outbox": [...], "store_integrity": "ok"}

        # Reads (rows as tuples in protocol order, or dicts):
        def load(self, workflow_id): ...  # events, by seq
        def heads(self): ...  # by workflow_id
        def commands(self, workflow_id, event_seq): ...  # outbox rows, by index
        def pending(self, limit): ...  # outbox rows, oldest commit first
        def mark_done(self, command_id, result): ...  # -> bool: changed

        # Step granularity: one method per request.
        def begin(self): ...  # BEGIN IMMEDIATE
        def insert_event(self, workflow_id, expected_seq, kind, payload):
            ...  # -> expected_seq + 1, or raise ca.Conflict
        def insert_command(self, workflow_id, event_seq, index, kind, payload):
            ...  # -> command id
        def commit(self): ...
        def rollback(self): ...  # nothing to do without a transaction

        # Call granularity: this instead of the five above (commands are
        # (kind, payload) pairs).
        def append(self, workflow_id, expected_seq, kind, payload, commands):
            ...  # -> (seq, command_ids)

        # Leases (optional: defining both declares the `leases` capability).
        # Time is ca.now(), the request's tick; settings.leases says whether
        # the run uses them (add the lease columns at setup only then).
        def claim(self, owner, lease_ticks, limit):
            ...  # -> [(outbox row, token, expires)], oldest commit first
        def mark_done_leased(self, command_id, token, result):
            ...  # -> bool: changed, only with the row's current token

        # Retry timers (optional: defining both declares the `retries`
        # capability). settings.retries says whether the run uses them (add
        # the timer columns at setup only then); with them, pending and
        # claim skip rows whose timer is in the future and dead-lettered
        # rows, and mark_done never marks a dead-lettered row.
        def schedule_retry(self, command_id, token, error, policy, jitter_permille):
            ...  # -> None (done, dead, or lease passed on) or
            #      (attempts, next_attempt_at, dead_lettered); token is None
            #      without leases; policy is a ca.RetryPolicy
        def timers(self):
            ...  # -> rows that failed at least once, TIMER order, by commit

        # Online backups (optional: defining it declares the `backup`
        # capability). `dump` then also reads a backup: crashsim asks it
        # with settings.with_store_path(backup_path).
        @classmethod
        def backup(cls, settings, path): ...  # e.g. sqlite3.Connection.backup

    class Receiver:
        def __init__(self, settings): ...  # settings.receiver, .hotel_failure

        @classmethod
        def setup(cls, settings): ...

        @classmethod
        def dump(cls, settings):
            return {"effects": [...], "dedup": [...], "receiver_integrity": "ok"}

        # Step granularity (`request` is a ca.Request: key, kind, payload,
        # attempt, sent_tick):
        def begin(self): ...
        def lookup(self, request): ...  # -> ("new"|"seen"|"conflict", result)
        def apply(self, request): ...  # -> (effect_id, result); ca.perform
        def commit(self): ...
        def rollback(self): ...

        # Call granularity: this instead.
        def handle(self, request):
            ...  # -> ("applied", result, effect_id) | ("duplicate", result,
            #         None) | ("conflict", None, None)

        # De-dup retention (with `retries`; optional: without it records
        # are kept forever). settings.dedup_retention says whether to stamp
        # each record with ca.now() when it is applied.
        def purge_dedup(self, now, retention_ticks):
            ...  # -> how many records applied before now - retention_ticks went

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
- A store class with `claim` and `mark_done_leased` declares the `leases`
  capability: the hello's answer lists it and the SDK dispatches both ops
  (claimed rows as `(row, token, expires)` tuples, `LEASED` order, or
  dicts). A class with only one of them is refused before the hello.
  `settings.leases` is the hello's `leases`: true only in runs with leases.
- A store class with `schedule_retry` and `timers` declares the `retries`
  capability (retry timers, the dead letter, de-dup retention); a receiver's
  `purge_dedup` is then served (answering 0 removed if it has none).
  `settings.retries` and `settings.dedup_retention` are the hello's.
  `RetryPolicy.delay(attempt, jitter_permille)` computes crashsim's delay.
- `open` answers the level that `PRAGMA synchronous` reads back on the
  object's `connection` attribute (or what its `synchronous()` method says);
  with neither (a library owns the connection), `null`: crashsim then judges
  I9 from what the store's SQLite did.
- A `dump` part without `store_integrity` / `receiver_integrity` gets it
  from the SDK: `integrity_check(path)` of the hello's file, on a
  connection of its own.
- Errors wrapped by a library (SQLAlchemy's `OperationalError`, Django's,
  peewee's) are answered by the `sqlite3` error in their `__cause__` /
  `__context__` chain (or SQLAlchemy's `.orig`).
- Rows may be tuples in the protocol's field order (the order of `EVENT`,
  `HEAD`, `OUTBOX`, `EFFECT`, `DEDUP` below) or dicts.
- Errors: raise `Conflict` for a stale append, `Invalid` for bad input,
  `Busy` if you detect contention yourself; a sqlite3 error with code
  SQLITE_BUSY or SQLITE_LOCKED is answered `busy`, one of the machine's
  (SQLITE_FULL, SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_NOMEM, SQLITE_PERM,
  SQLITE_NOLFS: a full disk, an I/O error) `environment`, which crashsim
  reports as an error of the run and never as a finding (raise
  `Environment` for your own), and any other exception `failed` (its
  traceback goes to stderr). The loop keeps serving after every error
  answer.
- `perform`, `canonical`, `core_digest`, `command_id` compute what
  crashsim's reference computes, byte for byte; `now()` is the current
  request's simulated tick (never read the wall clock).

Modules: `protocol` (the loop, `serve`), `settings` (the hello, `connect`,
row shapes), `effect` (the business effect, canonical JSON, digests),
`errors` (the error kinds), `integrity` (a file's `integrity_check`).

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
from .errors import (
    AdapterError,
    Busy,
    Conflict,
    Environment,
    Invalid,
    Unsupported,
    error_kind,
)
from .integrity import integrity_check
from .protocol import PROTOCOL, now, serve
from .settings import (
    DEDUP,
    EFFECT,
    EVENT,
    HEAD,
    LEASED,
    OUTBOX,
    RETRIED,
    SYNCHRONOUS_LEVELS,
    TIMER,
    Database,
    Request,
    RetryPolicy,
    Settings,
    connect,
)
from .version import VERSION as __version__

__all__ = [
    "DEDUP",
    "EFFECT",
    "EVENT",
    "HEAD",
    "LEASED",
    "OUTBOX",
    "PROTOCOL",
    "RETRIED",
    "SYNCHRONOUS_LEVELS",
    "TIMER",
    "__version__",
    "AdapterError",
    "Busy",
    "Conflict",
    "Database",
    "Environment",
    "Invalid",
    "Request",
    "RetryPolicy",
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
    "integrity_check",
    "now",
    "perform",
    "serve",
]
