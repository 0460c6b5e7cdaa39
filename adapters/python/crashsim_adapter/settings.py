"""What the hello says (databases, failure rule), how to connect, and the
shapes of rows and receiver requests."""

from .errors import Invalid

# Field order of rows given as tuples (the order of the protocol's objects).
EVENT = ("workflow_id", "seq", "kind", "payload")
HEAD = ("workflow_id", "last_seq", "kind", "commands_done")
OUTBOX = ("command_id", "workflow_id", "event_seq", "kind", "payload", "done", "result")
EFFECT = ("effect_id", "key", "kind", "payload", "result")
DEDUP = ("key", "digest", "result", "effect_id")
# A claimed row (the `leases` capability): the outbox row (a tuple in OUTBOX
# order, or a dict), its fencing token, the tick its lease expires at.
LEASED = ("row", "token", "expires")
# A row's retry state (the `retries` capability's `timers` and the dump).
TIMER = (
    "command_id",
    "workflow_id",
    "attempts",
    "next_attempt_at",
    "dead_lettered_at",
    "last_error",
    "done",
)
# What `schedule_retry` did: failed attempts so far, the tick the row is due
# again at (None once dead-lettered), whether it was dead-lettered now.
RETRIED = ("attempts", "next_attempt_at", "dead_lettered")

SYNCHRONOUS_LEVELS = {"off": 0, "normal": 1, "full": 2, "extra": 3}

JOURNAL_MODES = ("wal", "delete")


# ---------------------------------------------------------------- settings


class Database:
    """One database of the hello: where it is and how to configure it."""

    __slots__ = ("path", "journal_mode", "synchronous", "busy_timeout_ms")

    def __init__(self, fields):
        fields = fields or {}
        self.path = fields.get("path")
        self.journal_mode = str(fields.get("journal_mode", "wal")).lower()
        self.synchronous = str(fields.get("synchronous", "full")).lower()
        self.busy_timeout_ms = int(fields.get("busy_timeout_ms", 0))
        if self.journal_mode not in JOURNAL_MODES:
            raise Invalid(f"unknown journal_mode {self.journal_mode!r}")
        if self.synchronous not in SYNCHRONOUS_LEVELS:
            raise Invalid(f"unknown synchronous {self.synchronous!r}")

    def __repr__(self):
        return (
            f"Database(path={self.path!r}, journal_mode={self.journal_mode!r}, "
            f"synchronous={self.synchronous!r}, "
            f"busy_timeout_ms={self.busy_timeout_ms!r})"
        )


class Settings:
    """What the hello said: the databases, the failure rule, who we are."""

    __slots__ = (
        "hello",
        "purpose",
        "actor",
        "incarnation",
        "seed",
        "store",
        "receiver",
        "hotel_failure",
        "leases",
        "retries",
        "dedup_retention",
    )

    def __init__(self, hello):
        self.hello = hello
        self.purpose = hello.get("purpose")
        self.actor = hello.get("actor")
        self.incarnation = hello.get("incarnation")
        self.seed = hello.get("seed")
        self.store = Database(hello.get("store"))
        self.receiver = Database(hello.get("receiver"))
        failure = hello.get("hotel_failure") or {}
        self.hotel_failure = (
            int(failure.get("numerator", 0)),
            int(failure.get("denominator", 1)),
        )
        # True only in runs whose workers claim rows with leases: a store
        # with the capability adds what leases need at `setup`.
        self.leases = bool(hello.get("leases", False))
        # True only in runs with retry timers: a store with the capability
        # adds its timer columns at `setup`.
        self.retries = bool(hello.get("retries", False))
        # True only in runs whose receivers purge de-dup records by age: a
        # receiver with the capability stamps each record's tick.
        self.dedup_retention = bool(hello.get("dedup_retention", False))

    def with_store_path(self, path):
        """These settings with the store's database at `path` (a backup's,
        for its `dump`): the same journal mode and `synchronous`."""
        other = Settings(self.hello)
        other.store.path = path
        return other


def connect(database):
    """A sqlite3 connection to `database` with every setting of the hello.

    Autocommit (`isolation_level=None`: write `BEGIN IMMEDIATE` yourself), the
    busy timeout (0: busy is answered at once), the journal mode (read back:
    a file that refused it is an error) and `synchronous`, which belongs to
    the connection and must be set on every one.
    """
    import sqlite3

    conn = sqlite3.connect(
        database.path,
        timeout=database.busy_timeout_ms / 1000,
        isolation_level=None,
    )
    mode = conn.execute(f"PRAGMA journal_mode={database.journal_mode}").fetchone()
    if str(mode[0]).lower() != database.journal_mode:
        raise RuntimeError(
            f"journal_mode stayed {mode[0]}, wanted {database.journal_mode}"
        )
    conn.execute(f"PRAGMA synchronous={database.synchronous}")
    return conn


class RetryPolicy:
    """How retryable failures are retried (`schedule_retry`'s `policy`)."""

    __slots__ = ("max_attempts", "backoff_base_ticks", "backoff_cap_ticks")

    def __init__(self, fields):
        self.max_attempts = int(fields["max_attempts"])
        self.backoff_base_ticks = int(fields["backoff_base_ticks"])
        self.backoff_cap_ticks = int(fields["backoff_cap_ticks"])

    def delay(self, attempt, jitter_permille=0):
        """The delay after failed attempt `attempt` (from 1): the base
        doubled per attempt, capped, plus `jitter_permille` thousandths."""
        doubled = self.backoff_base_ticks << min(max(attempt - 1, 0), 40)
        delay = min(doubled, self.backoff_cap_ticks)
        return delay + delay * min(jitter_permille, 500) // 1000

    def __repr__(self):
        return (
            f"RetryPolicy(max_attempts={self.max_attempts}, "
            f"backoff_base_ticks={self.backoff_base_ticks}, "
            f"backoff_cap_ticks={self.backoff_cap_ticks})"
        )


class Request:
    """A delivery to a receiver: `key` and the core parameters `kind` and
    `payload`; `attempt` and `sent_tick` are metadata, not identity."""

    __slots__ = ("key", "kind", "payload", "attempt", "sent_tick")

    def __init__(self, fields):
        self.key = fields["key"]
        self.kind = fields["kind"]
        self.payload = fields["payload"]
        self.attempt = fields.get("attempt", 0)
        self.sent_tick = fields.get("sent_tick", 0)

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self):
        return f"Request({self.as_dict()!r})"
