"""Toy adapters over in-memory state, to test the SDK's loop apart from SQLite.

toy_adapter.py step     a step store and receiver that misbehave on purpose
toy_adapter.py forced   the same classes, served with granularity="call"
toy_adapter.py call     a store with only `append`, a receiver with only `handle`
toy_adapter.py store_only  the step store alone
toy_adapter.py broken   a store class without its operations (serve refuses it)
toy_adapter.py leases   the step store with the two lease methods
toy_adapter.py half_leases  a store with `claim` but no `mark_done_leased`
toy_adapter.py retries  the step store with the two timer methods, a purging receiver
toy_adapter.py half_retries  a store with `schedule_retry` but no `timers`
toy_adapter.py library  a store and receiver that cannot tell their level nor
                        check their files (a library owns the connection)
"""

import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import crashsim_adapter as ca  # noqa: E402

EVENTS = {}  # workflow_id -> [(seq, kind, payload)], this process only


class StepStore:
    def __init__(self, settings):
        self.settings = settings
        self.transaction = None

    def synchronous(self):
        return ca.SYNCHRONOUS_LEVELS[self.settings.store.synchronous]

    @classmethod
    def dump(cls, settings):
        events = [
            (workflow_id, seq, kind, payload)
            for workflow_id in sorted(EVENTS)
            for seq, kind, payload in EVENTS[workflow_id]
        ]
        return {"events": events, "outbox": [], "store_integrity": ["ok"]}

    def load(self, workflow_id):
        print("a stray print from user code")
        os.write(1, b"a stray write to fd 1\n")
        return [(workflow_id, *event) for event in EVENTS.get(workflow_id, [])]

    def heads(self):
        raise RuntimeError("boom")

    def commands(self, workflow_id, event_seq):
        raise sqlite3.OperationalError("database is locked")

    def pending(self, limit):
        raise ca.Busy("held by another connection")

    def mark_done(self, command_id, result):
        # now() is the tick of the request being answered.
        return ca.now() == 42

    def begin(self):
        if self.transaction is not None:
            raise RuntimeError("a transaction is already open")
        self.transaction = []

    def insert_event(self, workflow_id, expected_seq, kind, payload):
        if len(EVENTS.get(workflow_id, [])) != expected_seq:
            raise ca.Conflict(f"{workflow_id} is no longer at seq {expected_seq}")
        self.transaction.append((workflow_id, expected_seq + 1, kind, payload))
        return expected_seq + 1

    def insert_command(self, workflow_id, event_seq, index, kind, payload):
        if kind == "bad":
            raise ca.Invalid(f"bad command kind {kind!r}")
        if kind == "bytes":
            return b"not JSON"  # answered `failed`, not a crash of the loop
        return ca.command_id(workflow_id, event_seq, index)

    def commit(self):
        for workflow_id, seq, kind, payload in self.transaction:
            EVENTS.setdefault(workflow_id, []).append((seq, kind, payload))
        self.transaction = None

    def rollback(self):
        self.transaction = None


class StepReceiver:
    def __init__(self, settings):
        self.settings = settings
        self.seen = {}

    def synchronous(self):
        return 3

    @classmethod
    def dump(cls, settings):
        return {
            "effects": [(1, "k", "lock_budget", "{}", '{"token":"tok-1"}')],
            "dedup": [{"key": "k", "digest": "d", "result": "r", "effect_id": 1}],
            "receiver_integrity": "ok",
        }

    def begin(self):
        pass

    def lookup(self, request):
        if request.key not in self.seen:
            return "new", None
        if self.seen[request.key][0] != request.payload:
            return "conflict", None
        return "seen", self.seen[request.key][1]

    def apply(self, request):
        effect_id = len(self.seen) + 1
        result = ca.perform(request.kind, request.payload, effect_id, (0, 1))
        self.seen[request.key] = (request.payload, result)
        return effect_id, result

    def commit(self):
        pass

    def rollback(self):
        pass


class CallStore(StepStore):
    begin = insert_event = insert_command = commit = rollback = None

    def append(self, workflow_id, expected_seq, kind, payload, commands):
        if len(EVENTS.get(workflow_id, [])) != expected_seq:
            raise ca.Conflict(f"{workflow_id} is no longer at seq {expected_seq}")
        EVENTS.setdefault(workflow_id, []).append((expected_seq + 1, kind, payload))
        ids = [
            f"{workflow_id}/{index}/{kind}" for index, (kind, _) in enumerate(commands)
        ]
        return expected_seq + 1, ids


class CallReceiver(StepReceiver):
    begin = lookup = apply = commit = rollback = None

    def handle(self, request):
        if request.key in self.seen:
            return "duplicate", self.seen[request.key][1], None
        self.seen[request.key] = (request.payload, "done")
        return "applied", "done", len(self.seen)


class LeaseStore(StepStore):
    """Leases over nothing: answers what the SDK must carry, with now()."""

    def claim(self, owner, lease_ticks, limit):
        row = ("w:1:0", "w", 1, "lock_budget", "{}", 0, None)
        as_dict = dict(zip(ca.OUTBOX, row, strict=True))
        expires = ca.now() + lease_ticks
        claimed = [(row, 7, expires), {"row": as_dict, "token": 8, "expires": expires}]
        return claimed[:limit] if owner != "nobody" else []

    def mark_done_leased(self, command_id, token, result):
        return token == 8 and result is not None


class HalfLeaseStore(StepStore):
    def claim(self, owner, lease_ticks, limit):
        return []


class RetryStore(StepStore):
    """Timers over nothing: answers what the SDK must carry, with now()."""

    def schedule_retry(self, command_id, token, error, policy, jitter_permille):
        if command_id == "done":
            return None
        if command_id == "dead":
            return {
                "attempts": policy.max_attempts,
                "next_attempt_at": None,
                "dead_lettered": 1,
            }
        attempts = 2 if token is None else token
        due = ca.now() + policy.delay(attempts, jitter_permille)
        return (attempts, due, False)

    def timers(self):
        return [
            ("w:1:0", "w", 2, ca.now(), None, "busy", 0),
            {
                "command_id": "w:1:1",
                "workflow_id": "w",
                "attempts": 4,
                "next_attempt_at": None,
                "dead_lettered_at": 9,
                "last_error": "poison",
                "done": False,
            },
        ]


class RetryReceiver(StepReceiver):
    def purge_dedup(self, now, retention_ticks):
        return now - retention_ticks


class HalfRetryStore(StepStore):
    def schedule_retry(self, command_id, token, error, policy, jitter_permille):
        return None


class LibraryStore(StepStore):
    """No `synchronous()`, no `connection`, a dump of rows only: the SDK
    answers `open` with null and checks the file's integrity itself."""

    synchronous = None

    @classmethod
    def setup(cls, settings):
        for database in (settings.store, settings.receiver):
            sqlite3.connect(database.path).close()  # the files, empty

    @classmethod
    def dump(cls, settings):
        return {"events": [], "outbox": []}


class LibraryReceiver(StepReceiver):
    synchronous = None

    @classmethod
    def dump(cls, settings):
        return {"effects": [], "dedup": []}


class BrokenStore:
    @classmethod
    def dump(cls, settings):
        return {}


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "step":
        ca.serve(store=StepStore, receiver=StepReceiver, name="toy", version=3)
    elif mode == "forced":
        ca.serve(store=StepStore, receiver=StepReceiver, granularity="call")
    elif mode == "call":
        ca.serve(store=CallStore, receiver=CallReceiver, name="toy-call")
    elif mode == "store_only":
        ca.serve(store=StepStore)
    elif mode == "leases":
        ca.serve(store=LeaseStore, receiver=StepReceiver, name="toy-leases")
    elif mode == "half_leases":
        ca.serve(store=HalfLeaseStore)
    elif mode == "retries":
        ca.serve(store=RetryStore, receiver=RetryReceiver, name="toy-retries")
    elif mode == "half_retries":
        ca.serve(store=HalfRetryStore)
    elif mode == "library":
        ca.serve(store=LibraryStore, receiver=LibraryReceiver, name="toy-library")
    elif mode == "broken":
        ca.serve(store=BrokenStore)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
