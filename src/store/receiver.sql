-- The idempotent receiver (PROTOCOL.md §4): a business effect and the
-- de-duplication record that folds repeats, always written together.
-- `effects` has no unique constraint on `key` on purpose: a receiver that
-- forgets to de-duplicate must be able to record a second effect, so that
-- the checker can see it (I2).
CREATE TABLE IF NOT EXISTS effects (
  effect_id INTEGER PRIMARY KEY,
  key       TEXT NOT NULL,               -- the idempotency key the request carried
  kind      TEXT NOT NULL,
  payload   TEXT NOT NULL,               -- the request's core parameters
  result    TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS dedup (
  key       TEXT PRIMARY KEY,
  digest    TEXT NOT NULL,               -- digest of the core parameters
  result    TEXT NOT NULL,               -- returned again to every repeat
  effect_id INTEGER NOT NULL
);
