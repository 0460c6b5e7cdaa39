"""example_schema: the files of example_store.py. The store's events and
outbox, the receiver's effects and de-dup records, the columns that runs with
leases, retry timers or a de-dup retention add at setup, and the queries
that read them. Stdlib only; example_store.py imports it from beside itself.
"""

STORE_SCHEMA = """
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS events (
  workflow_id TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  payload     TEXT NOT NULL,          -- JSON, keys sorted
  created_at  INTEGER NOT NULL,       -- the simulated tick of the append
  PRIMARY KEY (workflow_id, seq)
);
CREATE TABLE IF NOT EXISTS outbox (
  command_id   TEXT PRIMARY KEY,      -- "{workflow_id}:{event_seq}:{index}"
  workflow_id  TEXT NOT NULL,
  event_seq    INTEGER NOT NULL,
  kind         TEXT NOT NULL,
  payload      TEXT NOT NULL,
  processed_at INTEGER,               -- the tick it was marked done; NULL while pending
  result       TEXT                   -- the receiver's confirmed answer
);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (processed_at)
  WHERE processed_at IS NULL;
CREATE INDEX IF NOT EXISTS outbox_event ON outbox (workflow_id, event_seq);
COMMIT;
"""

RECEIVER_SCHEMA = """
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS effects (
  effect_id INTEGER PRIMARY KEY,
  key       TEXT NOT NULL,            -- the idempotency key the request carried
  kind      TEXT NOT NULL,
  payload   TEXT NOT NULL,
  result    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS dedup (
  key       TEXT PRIMARY KEY,
  digest    TEXT NOT NULL,            -- digest of the core parameters
  result    TEXT NOT NULL,            -- returned again to every repeat
  effect_id INTEGER NOT NULL
);
COMMIT;
"""

# The lease of an outbox row, added at setup only in runs with leases (the
# hello's `leases`), so the files of lease-free runs keep their schema.
LEASE_COLUMNS = (
    ("lease_owner", "TEXT"),  # the claiming worker's life; NULL: never claimed
    ("lease_expires", "INTEGER"),  # simulated tick; NULL: never claimed
    ("lease_token", "INTEGER NOT NULL DEFAULT 0"),  # grows with every claim
)

# A row's retry timer, added at setup only in runs with timers (the hello's
# `retries`).
TIMER_COLUMNS = (
    ("attempts", "INTEGER NOT NULL DEFAULT 0"),  # failed (retryable) attempts
    ("next_attempt_at", "INTEGER"),  # simulated tick; NULL: due now
    ("last_error", "TEXT"),  # the last retryable error
    ("dead_lettered_at", "INTEGER"),  # simulated tick; NULL: not dead-lettered
)

# The tick a de-dup record was applied at, added at setup only in runs with a
# de-dup retention (the hello's `dedup_retention`).
RETENTION_COLUMNS = (("recorded_at", "INTEGER"),)

# Rows that are due at tick ?2: not done, not dead-lettered, timer passed.
DUE = (
    "processed_at IS NULL AND dead_lettered_at IS NULL"
    " AND (next_attempt_at IS NULL OR next_attempt_at <= ?2)"
)

TIMERS_QUERY = """SELECT command_id, workflow_id, attempts, next_attempt_at,
       dead_lettered_at, last_error, processed_at IS NOT NULL
  FROM outbox WHERE attempts > 0 OR dead_lettered_at IS NOT NULL
 ORDER BY rowid"""

OUTBOX_COLUMNS = (
    "command_id, workflow_id, event_seq, kind, payload,"
    " processed_at IS NOT NULL, result"
)


def add_columns(conn, table, columns):
    """Adds the columns `table` lacks (setup may run again)."""
    conn.execute("BEGIN IMMEDIATE")
    present = {
        name
        for (name,) in conn.execute(
            "SELECT name FROM pragma_table_info(?) ORDER BY cid", (table,)
        )
    }
    for name, declaration in columns:
        if name not in present:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {declaration}")
    conn.execute("COMMIT")


def add_lease_columns(conn):
    """Adds the lease columns the outbox lacks (setup may run again)."""
    add_columns(conn, "outbox", LEASE_COLUMNS)


def add_timer_columns(conn):
    """Adds the retry timer columns the outbox lacks."""
    add_columns(conn, "outbox", TIMER_COLUMNS)


def add_retention_columns(conn):
    """Adds `recorded_at` to the de-dup records, if it is not there."""
    add_columns(conn, "dedup", RETENTION_COLUMNS)
