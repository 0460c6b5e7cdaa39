"""example_store: an event store, outbox and idempotent receiver on SQLite,
served to crashsim through crashsim_adapter.

    crashsim run smoke --sut "python3 adapters/python/example_store.py" --seeds 200
    crashsim run smoke --sut "python3 adapters/python/example_store.py --bug max_seq"

It implements shared/PROTOCOL.md the way such code is commonly written in
Python: `sqlite3` in autocommit mode (`isolation_level=None`) with explicit
`BEGIN IMMEDIATE`, every connection opened with the hello's settings (busy
timeout 0, WAL, `synchronous` as asked), events keyed by (workflow_id, seq)
and appended only at `expected_seq + 1`, outbox rows in the event's
transaction under derived ids (`workflow:seq:index`), and a receiver on its
own file that writes the effect and its de-duplication record in one
transaction. Timestamps are the request's simulated tick, never the clock,
and every query that returns rows has an ORDER BY. The files' schema, and
the columns that runs with leases or timers add, are in example_schema.py
(beside this file).

It serves leases (the `leases` capability; scenarios/leases.toml): in runs
with leases, `setup` adds three lease columns to the outbox; `claim` takes
free rows (never claimed, or expired by the simulated tick) in one
`UPDATE ... RETURNING`, each with a fencing token one greater than the
row's last; `mark_done_leased` counts only with the row's current token.

It serves retry timers and de-dup retention (the `retries` capability;
scenarios/retries.toml): in runs with timers, `setup` adds four columns to
the outbox (`attempts`, `next_attempt_at`, `last_error`,
`dead_lettered_at`); `schedule_retry` records a retryable failure in one
`UPDATE ... RETURNING` (one more attempt, due again after the backoff, or
dead-lettered at `max_attempts`); `pending` and `claim` skip rows whose
timer is in the future and dead-lettered rows, and no `mark_done` marks a
dead-lettered row. In runs with a retention, the receiver stamps each de-dup
record with its tick (`recorded_at`), and `purge_dedup` deletes the old ones.

It takes online backups (the `backup` capability; scenarios/backups.toml):
`backup` copies the store's database with SQLite's backup API
(`sqlite3.Connection.backup`) into a new file opened with the same settings,
on connections of its own, while other processes work; `dump` reads a
backup like the store itself.

Options (--granularity, --bug and every known mistake): example_options.py.
"""

import os
import sqlite3
import sys

import crashsim_adapter as ca
from example_options import parse_args
from example_schema import (
    DUE,
    OUTBOX_COLUMNS,
    RECEIVER_SCHEMA,
    STORE_SCHEMA,
    TIMERS_QUERY,
    add_lease_columns,
    add_retention_columns,
    add_timer_columns,
)

BUGS = frozenset()

# The dict_dedup bug's memory: key -> (digest, result), gone with the process.
SEEN = {}


def respaced(payload):
    """json_spacing: the payload as json.dumps writes it (equal JSON)."""
    import json

    return json.dumps(json.loads(payload))


def connect(database):
    """A connection with every per-connection setting the hello asks for."""
    first = not os.path.exists(database.path)
    conn = sqlite3.connect(
        database.path,
        timeout=database.busy_timeout_ms / 1000,  # 0: answer busy at once
        isolation_level=None,  # autocommit; transactions are explicit
    )
    (mode,) = conn.execute(f"PRAGMA journal_mode={database.journal_mode}").fetchone()
    if mode.lower() != database.journal_mode:
        raise RuntimeError(
            f"journal_mode stayed {mode}, wanted {database.journal_mode}"
        )
    if BUGS & {"sync_normal", "sync_normal_hidden"}:
        conn.execute("PRAGMA synchronous=NORMAL")  # "NORMAL is safe enough in WAL"
    elif "pragmas_once" in BUGS and not first:
        pass  # "set when the database was created"
    else:
        conn.execute(f"PRAGMA synchronous={database.synchronous}")
    return conn


def reported_level(database):
    """What `open` reports under sync_normal_hidden: the level asked for."""
    return ca.SYNCHRONOUS_LEVELS[database.synchronous]


def integrity(conn):
    return "; ".join(row[0] for row in conn.execute("PRAGMA integrity_check"))


class Store:
    """The event store and its outbox, over one connection."""

    def __init__(self, settings):
        self.connection = connect(settings.store)
        # Whether the run has retry timers (every process gets the same hello).
        self.retries = settings.retries
        if "sync_normal_hidden" in BUGS:
            self.synchronous = lambda: reported_level(settings.store)

    @classmethod
    def setup(cls, settings):
        conn = connect(settings.store)
        conn.executescript(STORE_SCHEMA)
        if settings.leases:
            add_lease_columns(conn)
        if settings.retries:
            add_timer_columns(conn)
        conn.close()

    @classmethod
    def dump(cls, settings):
        conn = connect(settings.store)
        try:
            events = conn.execute(
                "SELECT workflow_id, seq, kind, payload FROM events"
                " ORDER BY workflow_id, seq"
            ).fetchall()
            outbox = conn.execute(
                f"SELECT {OUTBOX_COLUMNS} FROM outbox ORDER BY rowid"
            ).fetchall()
            timers = conn.execute(TIMERS_QUERY).fetchall() if settings.retries else []
            return {
                "events": events,
                "outbox": outbox,
                "timers": timers,
                "store_integrity": integrity(conn),
            }
        finally:
            conn.close()

    @classmethod
    def backup(cls, settings, path, part=0):
        """An online backup into `path`: one consistent snapshot of the
        database, WAL included, read under SQLite's own read lock. (True
        would ask crashsim for another part: only the bug below does.)"""
        if "backup_db_file_only" in BUGS:
            import shutil

            shutil.copyfile(settings.store.path, path)  # "one file is the database"
            return None
        if "backup_file_set_unlocked" in BUGS:
            return cls.copy_file_set(settings, path, part)
        source = connect(settings.store)
        target = connect(settings.with_store_path(path).store)
        try:
            source.backup(target)
        finally:
            target.close()
            source.close()

    @staticmethod
    def copy_file_set(settings, path, part):
        """backup_file_set_unlocked: `cp store.db-wal`, then (part 1, later)
        a checkpoint and `cp store.db`, with no read transaction across."""
        import os
        import shutil

        if part == 0:
            if os.path.exists(settings.store.path + "-wal"):
                shutil.copyfile(settings.store.path + "-wal", path + "-wal")
            return True  # the main file in a later part
        conn = connect(settings.store)
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            conn.close()
        shutil.copyfile(settings.store.path, path)
        return None

    # Reads: one statement each, outside any explicit transaction.

    def load(self, workflow_id):
        # load_by_created_at: "events are in the order they happened".
        order = "created_at" if "load_by_created_at" in BUGS else "seq"
        return self.connection.execute(
            "SELECT workflow_id, seq, kind, payload FROM events"
            f" WHERE workflow_id = ? ORDER BY {order}",
            (workflow_id,),
        ).fetchall()

    def heads(self):
        # With MAX() the only aggregate, SQLite takes `kind` from the max row.
        return self.connection.execute(
            """SELECT h.workflow_id, h.seq, h.kind,
                      (SELECT COUNT(*) FROM outbox o
                        WHERE o.workflow_id = h.workflow_id AND o.event_seq = h.seq
                          AND o.processed_at IS NOT NULL)
                 FROM (SELECT workflow_id, MAX(seq) AS seq, kind
                         FROM events GROUP BY workflow_id) h
                ORDER BY h.workflow_id"""
        ).fetchall()

    def commands(self, workflow_id, event_seq):
        return self.connection.execute(
            f"SELECT {OUTBOX_COLUMNS} FROM outbox"
            " WHERE workflow_id = ? AND event_seq = ? ORDER BY rowid",
            (workflow_id, event_seq),
        ).fetchall()

    def pending(self, limit):
        # rowid order is commit order: rows are inserted under the write lock.
        if self.retries:
            return self.connection.execute(
                f"SELECT {OUTBOX_COLUMNS} FROM outbox"
                f" WHERE {DUE} ORDER BY rowid LIMIT ?1",
                (limit, ca.now()),
            ).fetchall()
        return self.connection.execute(
            f"SELECT {OUTBOX_COLUMNS} FROM outbox"
            " WHERE processed_at IS NULL ORDER BY rowid LIMIT ?",
            (limit,),
        ).fetchall()

    def mark_done(self, command_id, result):
        # A row done with a result is never touched again; one marked done
        # without a result gets it when it comes. A dead-lettered row waits
        # for a person, whatever a late reply says.
        cursor = self.connection.execute(
            f"""UPDATE outbox
                  SET processed_at = COALESCE(processed_at, ?3), result = ?2
                WHERE command_id = ?1{self.not_dead()}
                  AND (processed_at IS NULL OR (result IS NULL AND ?2 IS NOT NULL))""",
            (command_id, result, ca.now()),
        )
        return cursor.rowcount == 1

    def not_dead(self):
        return " AND dead_lettered_at IS NULL" if self.retries else ""

    # Leases: time is the request's simulated tick, ca.now().

    def claim(self, owner, lease_ticks, limit):
        # One statement: two workers never both take a row, and the token of
        # a row grows with every claim of it.
        now = ca.now()
        # With timers: not before a row's timer, and never a dead-lettered row.
        due = DUE if self.retries else "processed_at IS NULL"
        free = "(lease_expires IS NULL OR lease_expires <= ?2)"
        if "claim_unleased" in BUGS:
            # "An expired lease means its worker is still on it."
            free = "lease_expires IS NULL"
        rows = self.connection.execute(
            f"""UPDATE outbox
                   SET lease_owner = ?1, lease_expires = ?2 + ?3,
                       lease_token = lease_token + 1
                 WHERE rowid IN (SELECT rowid FROM outbox
                                  WHERE {due}
                                    AND {free}
                                  ORDER BY rowid LIMIT ?4)
             RETURNING rowid, lease_token, lease_expires, {OUTBOX_COLUMNS}""",
            (owner, now, lease_ticks, limit),
        ).fetchall()
        rows.sort()  # RETURNING promises no order; rowid is commit order
        # (rowid, token, expires, outbox row...) -> (outbox row, token, expires)
        return [(row[3:], row[1], row[2]) for row in rows]

    def mark_done_leased(self, command_id, token, result):
        if "unfenced_mark_done" in BUGS:
            # "The command_id names the row; whoever delivered it may say so."
            return self.mark_done(command_id, result)
        # As mark_done, and only while `token` is the row's current one: a
        # holder whose lease passed to another has a smaller token.
        cursor = self.connection.execute(
            f"""UPDATE outbox
                  SET processed_at = COALESCE(processed_at, ?3), result = ?2
                WHERE command_id = ?1 AND lease_token = ?4{self.not_dead()}
                  AND (processed_at IS NULL OR (result IS NULL AND ?2 IS NOT NULL))""",
            (command_id, result, ca.now(), token),
        )
        return cursor.rowcount == 1

    # Retry timers: time is the request's simulated tick, ca.now().

    def schedule_retry(self, command_id, token, error, policy, jitter_permille):
        # One statement: one more attempt, and either due again after the
        # backoff (base doubled per attempt, capped, plus the jitter) or
        # dead-lettered once max_attempts failed. With a lease token, only
        # its current holder reschedules, and the lease is released.
        leased = token is not None
        release = ", lease_owner = NULL, lease_expires = NULL" if leased else ""
        fenced = " AND lease_token = ?8" if leased else ""
        values = [
            command_id,
            error,
            ca.now(),
            policy.max_attempts,
            policy.backoff_base_ticks,
            policy.backoff_cap_ticks,
            min(jitter_permille, 500),
        ]
        if leased:  # SQLite refuses a value for a parameter the SQL lacks
            values.append(token)
        row = self.connection.execute(
            f"""UPDATE outbox
                   SET attempts = attempts + 1, last_error = ?2,
                       next_attempt_at = CASE WHEN attempts + 1 >= ?4 THEN NULL
                           ELSE ?3 + min(?6, ?5 << min(attempts, 40))
                                     * (1000 + ?7) / 1000 END,
                       dead_lettered_at = CASE WHEN attempts + 1 >= ?4
                           THEN ?3 ELSE NULL END{release}
                 WHERE command_id = ?1 AND processed_at IS NULL
                   AND dead_lettered_at IS NULL{fenced}
             RETURNING attempts, next_attempt_at, dead_lettered_at IS NOT NULL""",
            values,
        ).fetchone()
        return row  # None: done, dead-lettered, or the lease passed on

    def timers(self):
        return self.connection.execute(TIMERS_QUERY).fetchall()

    # The append, one step per request.

    def begin(self):
        if "head_outside_txn" in BUGS:
            return  # "read the head first; BEGIN only to write"
        if "autocommit" not in BUGS:  # "the driver handles transactions"
            self.connection.execute("BEGIN IMMEDIATE")

    def insert_event(self, workflow_id, expected_seq, kind, payload):
        conn = self.connection
        if "head_outside_txn" in BUGS:
            return self.insert_event_late_begin(
                workflow_id, expected_seq, kind, payload
            )
        if "max_seq" in BUGS:
            (seq,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE workflow_id = ?",
                (workflow_id,),
            ).fetchone()
        else:
            (head,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM events WHERE workflow_id = ?",
                (workflow_id,),
            ).fetchone()
            if head != expected_seq:
                raise ca.Conflict(
                    f"stale append: {workflow_id} is no longer at seq {expected_seq}"
                )
            seq = expected_seq + 1
        if "json_spacing" in BUGS:
            payload = respaced(payload)
        # load_by_created_at: the database's clock, CURRENT_TIMESTAMP.
        stamp = "CURRENT_TIMESTAMP" if "load_by_created_at" in BUGS else "?5"
        try:
            conn.execute(
                "INSERT INTO events (workflow_id, seq, kind, payload, created_at)"
                f" VALUES (?1, ?2, ?3, ?4, {stamp})",
                (workflow_id, seq, kind, payload)
                + (() if "load_by_created_at" in BUGS else (ca.now(),)),
            )
        except sqlite3.IntegrityError:
            raise ca.Conflict(
                f"stale append: {workflow_id} is no longer at seq {expected_seq}"
            ) from None
        if "two_transactions" in BUGS:
            # "Save the event first, so it is never lost; then its commands."
            conn.execute("COMMIT")
            conn.execute("BEGIN IMMEDIATE")
        return seq

    def insert_event_late_begin(self, workflow_id, expected_seq, kind, payload):
        # head_outside_txn: the check reads outside the transaction that writes.
        conn = self.connection
        (head,) = conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE workflow_id = ?",
            (workflow_id,),
        ).fetchone()
        if head != expected_seq:
            raise ca.Conflict(
                f"stale append: {workflow_id} is no longer at seq {expected_seq}"
            )
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT OR IGNORE INTO events (workflow_id, seq, kind, payload, created_at)"
            " VALUES (?1, ?2, ?3, ?4, ?5)",
            (workflow_id, expected_seq + 1, kind, payload, ca.now()),
        )
        return expected_seq + 1

    def insert_command(self, workflow_id, event_seq, index, kind, payload):
        if "uuid_ids" in BUGS:
            import uuid

            command_id = str(uuid.uuid4())
        else:
            command_id = ca.command_id(workflow_id, event_seq, index)
        if "json_spacing" in BUGS:
            payload = respaced(payload)
        verb = "INSERT OR IGNORE" if "head_outside_txn" in BUGS else "INSERT"
        self.connection.execute(
            f"{verb} INTO outbox (command_id, workflow_id, event_seq, kind, payload)"
            " VALUES (?, ?, ?, ?, ?)",
            (command_id, workflow_id, event_seq, kind, payload),
        )
        return command_id

    def commit(self):
        if "autocommit" in BUGS and not self.connection.in_transaction:
            return  # every INSERT committed on its own already
        self.connection.execute("COMMIT")

    def rollback(self):
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")


class Receiver:
    """The idempotent receiver: business effects and their de-dup records."""

    def __init__(self, settings):
        self.connection = connect(settings.receiver)
        self.hotel_failure = settings.hotel_failure
        # With a retention, each record carries the tick it was applied at.
        self.stamps = settings.dedup_retention
        if "sync_normal_hidden" in BUGS:
            self.synchronous = lambda: reported_level(settings.receiver)

    @classmethod
    def setup(cls, settings):
        conn = connect(settings.receiver)
        conn.executescript(RECEIVER_SCHEMA)
        if settings.dedup_retention:
            add_retention_columns(conn)
        conn.close()

    @classmethod
    def dump(cls, settings):
        conn = connect(settings.receiver)
        try:
            effects = conn.execute(
                "SELECT effect_id, key, kind, payload, result FROM effects"
                " ORDER BY effect_id"
            ).fetchall()
            dedup = conn.execute(
                "SELECT key, digest, result, effect_id FROM dedup ORDER BY key"
            ).fetchall()
            return {
                "effects": effects,
                "dedup": dedup,
                "receiver_integrity": integrity(conn),
            }
        finally:
            conn.close()

    def dedup_key(self, request):
        if "body_key" in BUGS:
            # "Hash the request: identical requests get identical keys."
            import hashlib
            import json

            body = json.dumps(request.as_dict(), sort_keys=True)
            return hashlib.sha256(body.encode()).hexdigest()
        key = request.key
        if "key_lower" in BUGS:
            key = key.lower()  # "ids are case-insensitive anyway"
        if "key_strip" in BUGS:
            key = key.strip()  # "stray whitespace from the client"
        return key

    def begin(self):
        if "lookup_outside_txn" in BUGS:
            return  # "a lookup needs no transaction; apply opens one"
        self.connection.execute("BEGIN IMMEDIATE")

    def lookup(self, request):
        key = self.dedup_key(request)
        if "dict_dedup" in BUGS:
            found = SEEN.get(key)
        else:
            found = self.connection.execute(
                "SELECT digest, result FROM dedup WHERE key = ?", (key,)
            ).fetchone()
        if found is None:
            return "new", None
        digest, result = found
        if digest != ca.core_digest(request.kind, request.payload):
            return "conflict", None
        return "seen", result

    def apply(self, request):
        conn = self.connection
        if "lookup_outside_txn" in BUGS:
            conn.execute("BEGIN IMMEDIATE")
        (effect_id,) = conn.execute(
            "SELECT COALESCE(MAX(effect_id), 0) + 1 FROM effects"
        ).fetchone()
        result = ca.perform(
            request.kind, request.payload, effect_id, self.hotel_failure
        )
        conn.execute(
            "INSERT INTO effects (effect_id, key, kind, payload, result)"
            " VALUES (?, ?, ?, ?, ?)",
            (effect_id, request.key, request.kind, request.payload, result),
        )
        if "dedup_apart" in BUGS:
            # "The effect is what matters: commit it, then remember the key."
            conn.execute("COMMIT")
            conn.execute("BEGIN IMMEDIATE")
        key = self.dedup_key(request)
        digest = ca.core_digest(request.kind, request.payload)
        if "dict_dedup" in BUGS:
            SEEN[key] = (digest, result)
        elif self.stamps:
            conn.execute(
                "INSERT INTO dedup (key, digest, result, effect_id, recorded_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (key, digest, result, effect_id, ca.now()),
            )
        elif "lookup_outside_txn" in BUGS:
            # "The key is unique anyway: a second insert does nothing."
            conn.execute(
                "INSERT OR IGNORE INTO dedup (key, digest, result, effect_id)"
                " VALUES (?, ?, ?, ?)",
                (key, digest, result, effect_id),
            )
        else:
            conn.execute(
                "INSERT INTO dedup (key, digest, result, effect_id)"
                " VALUES (?, ?, ?, ?)",
                (key, digest, result, effect_id),
            )
        return effect_id, result

    def purge_dedup(self, now, retention_ticks):
        # Records older than the retention go; the retention is above the
        # retry horizon, so no producer can still retry their commands.
        if not self.stamps:
            return 0
        if "early_dedup_purge" in BUGS:
            # "Nobody retries after that long; keep the table small."
            retention_ticks //= 100
        cursor = self.connection.execute(
            "DELETE FROM dedup WHERE recorded_at < ?",
            (max(now - retention_ticks, 0),),
        )
        return cursor.rowcount

    def commit(self):
        self.connection.execute("COMMIT")

    def rollback(self):
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")


def main(argv):
    global BUGS
    BUGS, granularity = parse_args(argv, __doc__)
    name = "+".join(["example_store", *sorted(BUGS)])
    ca.serve(
        store=Store,
        receiver=Receiver,
        name=name,
        version="1.0",
        granularity=granularity,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
