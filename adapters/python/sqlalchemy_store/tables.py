"""tables: the example's two files as SQLAlchemy Core tables.

The store's file holds `events` (the primary key (workflow_id, seq) is the
optimistic lock: a second append at the same seq is refused) and `outbox`
(a surrogate `id`, whose order is commit order because rows are inserted
under SQLite's write lock, and the lease and retry-timer columns). The
receiver's file holds `effects` and their `dedup` records. Times are
simulated ticks (`ca.now()`), never the clock.
"""

from sqlalchemy import (
    Column,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
)

store_metadata = MetaData()

events = Table(
    "events",
    store_metadata,
    Column("workflow_id", Text, primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("kind", Text, nullable=False),
    Column("payload", Text, nullable=False),  # JSON, as the writer sent it
    Column("created_at", Integer, nullable=False),  # the append's tick
)

outbox = Table(
    "outbox",
    store_metadata,
    Column("id", Integer, primary_key=True),  # commit order
    Column("command_id", Text, nullable=False, unique=True),  # wf:seq:index
    Column("workflow_id", Text, nullable=False),
    Column("event_seq", Integer, nullable=False),
    Column("kind", Text, nullable=False),
    Column("payload", Text, nullable=False),
    Column("processed_at", Integer),  # tick marked done; NULL while pending
    Column("result", Text),  # the receiver's confirmed answer
    # Leases: the claiming worker, until when, and the fencing token.
    Column("lease_owner", Text),
    Column("lease_expires", Integer),
    Column("lease_token", Integer, nullable=False, server_default="0"),
    # Retry timers: failed attempts, when due again, why, the dead letter.
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("next_attempt_at", Integer),
    Column("last_error", Text),
    Column("dead_lettered_at", Integer),
    Index("outbox_event", "workflow_id", "event_seq"),
)

receiver_metadata = MetaData()

effects = Table(
    "effects",
    receiver_metadata,
    Column("effect_id", Integer, primary_key=True, autoincrement=False),
    Column("key", Text, nullable=False),  # the idempotency key as sent
    Column("kind", Text, nullable=False),
    Column("payload", Text, nullable=False),
    Column("result", Text, nullable=False),
)

dedup = Table(
    "dedup",
    receiver_metadata,
    Column("key", Text, primary_key=True),
    Column("digest", Text, nullable=False),  # of the core parameters
    Column("result", Text, nullable=False),  # answered again to every repeat
    Column("effect_id", Integer, nullable=False),
    Column("recorded_at", Integer, nullable=False),  # tick, for the retention
)
