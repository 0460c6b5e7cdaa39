"""The options of example_store.py, and the known mistakes --bug switches on.

Options:
  --granularity step|call  step (default): one request per operation, so
                           crashsim can kill the process inside a transaction;
                           call: the same code served as whole operations
                           (append, handle), composed by the SDK.
  --bug NAME[,NAME...]     switch on known mistakes (or EXAMPLE_STORE_BUG=NAME;
                           the flag wins). Each is a small diff from the clean
                           code; what crashsim should report:

  dict_dedup        The receiver's de-dup records live in a module-level dict
                    instead of the dedup table. A restarted receiver is a new
                    process with an empty dict: a redelivered command is
                    applied twice. -> I2.
  two_transactions  insert_event commits the event and opens a new transaction
                    for its commands. A kill before `commit` leaves an event
                    without its commands (a lost command). -> I5, I1.
                    At `call` granularity crashsim kills the process inside
                    `append` through its VFS extension (the SDK loads it).
  max_seq           insert_event appends at MAX(seq)+1 whatever expected_seq
                    says: stale writers are not rejected. -> I3.
  sync_normal       PRAGMA synchronous=NORMAL "for speed" whatever the hello
                    asks (`open` reports 1): commits acknowledged before a
                    power cut may vanish. -> I9.
  sync_normal_hidden
                    As sync_normal, but `open` reports the level the hello
                    asked for instead of reading it back: only what the
                    store's SQLite did shows it (commits acknowledged with no
                    sync, counted by crashsim's VFS; commits lost). -> I9.
  pragmas_once      PRAGMA synchronous is set on the first connection only
                    (the one that creates the file), as if it were stored in
                    the database like journal_mode: every later connection
                    runs the SQLite build's default. -> I9 on power_loss,
                    whose SQLite defaults to NORMAL (acknowledged commits
                    lost in the cuts), and where a rollback journal is asked
                    for EXTRA; where the default makes the syncs asked (FULL
                    for WAL's EXTRA, or under NORMAL) no finding.
  uuid_ids          command_id = str(uuid.uuid4()) instead of the derived id:
                    runs are no longer deterministic (--check-determinism
                    names the first differing answer), and a command retried
                    under a new id defeats de-duplication.
  dedup_apart       The receiver commits the effect, then records the de-dup
                    entry in a second transaction. A kill in between leaves an
                    effect the receiver does not remember: the redelivery
                    applies it again. -> I2.
  body_key          The receiver de-duplicates by a hash of the whole request
                    body, delivery metadata (attempt, sent_tick) included:
                    every retry is a new key and is applied again. -> I2 (and
                    I7: a changed payload is never reported as a conflict).
  unfenced_mark_done
                    mark_done_leased acknowledges by command_id alone and
                    ignores the fencing token: a holder that paused past its
                    lease still marks the row done after another worker
                    claimed it (a late acknowledgement counts). -> I8, in
                    scenarios with leases.
  claim_unleased    claim takes only rows nobody ever leased ("an expired
                    lease means its worker is still on it"): a worker that
                    dies holding a lease leaves its rows to no one. -> I1
                    (the claim answer that left them out, with the lease
                    that had expired), in scenarios with leases.
  early_dedup_purge The receiver purges de-dup records after a hundredth of
                    the retention it is given ("they are never needed that
                    long"): a retry that comes back after its backoff finds
                    no record and is applied again. -> I2, in scenarios
                    with a retention (scenarios/retries.toml).
  key_lower         The receiver de-duplicates by key.lower() ("ids are
                    case-insensitive"): `Trip-Ab3:1:0` finds the record of
                    `trip-ab3:1:0`, and a near miss of a key in another case
                    is answered as a repeat. -> I7.
  key_strip         The receiver de-duplicates by key.strip() ("stray
                    whitespace from the client"): ` trip-s2:1:0` and
                    `trip-s2:1:0` are one key. -> I7.
  autocommit        No BEGIN: "sqlite3 with isolation_level=None handles
                    transactions", so each INSERT of an append commits on its
                    own. A writer killed between them leaves an event without
                    its commands, or rows stored although the append they
                    belong to never committed. -> I5.
  load_by_created_at
                    Events are stamped with CURRENT_TIMESTAMP (a second's
                    grain, by the writer's own clock) and `load` orders by
                    that stamp instead of seq. With clocks that skew and step
                    back by seconds (scenarios/clocks.toml; crashsim answers
                    the store's CURRENT_TIMESTAMP through its VFS extension),
                    a workflow's events come back out of order. -> I6.
  lookup_outside_txn
                    The receiver looks the key up before its transaction
                    ("a read needs no lock"), then applies the effect and
                    records the key with INSERT OR IGNORE in a transaction of
                    its own. Two receivers handling one duplicated delivery
                    at the same moment both find nothing and both apply it.
                    -> I2, at `call` granularity too, in a scenario that
                    suspends calls inside SQLite (scenarios/interleave.toml).
  head_outside_txn  The append reads the workflow's head before BEGIN
                    IMMEDIATE, checks it, then inserts the event with INSERT
                    OR IGNORE ("a retried append is harmless"). A writer
                    overtaken between the read and the write has its event
                    silently dropped and is told it committed. -> I3/I1, at
                    `call` granularity too (scenarios/interleave.toml).
                    (The same read inside BEGIN DEFERRED is safe in WAL:
                    SQLite refuses to upgrade a stale snapshot, SQLITE_BUSY.)
  backup_db_file_only
                    The backup copies the store's main file with
                    shutil.copyfile ("a SQLite database is one file"): in
                    WAL mode the commits since the last checkpoint live in
                    the -wal file, which it leaves behind. The backup lacks
                    commits acknowledged before it began. -> I11, in
                    scenarios that take backups (scenarios/backups.toml).
  backup_file_set_unlocked
                    The backup copies the whole file set, as a script of
                    cp commands would: the -wal file first, then, in a
                    later part while the store goes on, a checkpoint and
                    the main file, with no read transaction held across
                    them. The main file then holds pages newer than the
                    -wal copy SQLite lays over them: a torn backup, never
                    a state the store was in. -> I11 (backups.toml).
  json_spacing      No mistake: payloads are stored re-encoded by json.dumps
                    (`{"trip_id": "x"}`), equal JSON in other bytes. -> PASS.
"""

import os
import sys

KNOWN_BUGS = (
    "dict_dedup",
    "two_transactions",
    "max_seq",
    "sync_normal",
    "sync_normal_hidden",
    "pragmas_once",
    "uuid_ids",
    "dedup_apart",
    "body_key",
    "unfenced_mark_done",
    "claim_unleased",
    "early_dedup_purge",
    "key_lower",
    "key_strip",
    "json_spacing",
    "autocommit",
    "load_by_created_at",
    "lookup_outside_txn",
    "head_outside_txn",
    "backup_db_file_only",
    "backup_file_set_unlocked",
)


def parse_args(argv, usage):
    """(bugs, granularity) from the command line and EXAMPLE_STORE_BUG;
    --help prints `usage` (the store's own doc) and the options."""
    bugs = os.environ.get("EXAMPLE_STORE_BUG", "")
    granularity = "step"
    args = iter(argv)
    for arg in args:
        if arg in ("-h", "--help"):
            print(usage.rstrip() + "\n\n" + __doc__.strip())
            sys.exit(0)
        flag, has_value, value = arg.partition("=")
        if flag not in ("--bug", "--granularity"):
            raise SystemExit(f"example_store: unknown argument {arg!r} (see --help)")
        if not has_value:
            value = next(args, None)
            if value is None:
                raise SystemExit(f"example_store: {flag} needs a value")
        if flag == "--bug":
            bugs = value
        else:
            granularity = value
    chosen = frozenset(name for name in bugs.replace(" ", "").split(",") if name)
    unknown = sorted(chosen.difference(KNOWN_BUGS))
    if unknown:
        raise SystemExit(
            f"example_store: unknown bug {', '.join(unknown)};"
            f" known: {', '.join(KNOWN_BUGS)}"
        )
    if granularity not in ("step", "call"):
        raise SystemExit(f"example_store: granularity {granularity!r}: step or call")
    return chosen, granularity
