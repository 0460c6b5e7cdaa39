-- The event store and the transactional outbox (PROTOCOL.md §2, §3).
CREATE TABLE IF NOT EXISTS events (
  workflow_id TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  payload     TEXT NOT NULL,            -- JSON, keys sorted
  created_at  TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (workflow_id, seq)
);

-- `heads` (each workflow's last event and its kind) reads this index alone:
-- through the primary key it would fetch every event's row, payload and all,
-- for the bare column `kind`.
CREATE INDEX IF NOT EXISTS events_head ON events (workflow_id, seq, kind);

CREATE TABLE IF NOT EXISTS outbox (
  command_id   TEXT PRIMARY KEY,         -- "{workflow_id}:{event_seq}:{index}"
  workflow_id  TEXT NOT NULL,
  event_seq    INTEGER NOT NULL,
  kind         TEXT NOT NULL,
  payload      TEXT NOT NULL,
  processed_at TEXT,                     -- NULL while pending
  result       TEXT                      -- the receiver's confirmed answer, set with processed_at
);

-- Workers scan pending rows in commit order; writers look up an event's commands.
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (processed_at) WHERE processed_at IS NULL;
CREATE INDEX IF NOT EXISTS outbox_event ON outbox (workflow_id, event_seq);
