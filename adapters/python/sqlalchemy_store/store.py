"""store: the event store and its outbox, written with SQLAlchemy Core and
served at `call` granularity: one `append` per decision, in one
`engine.begin()` block, plus the reads, leases and retry timers.

Each method is one transaction on the engine's pooled connection. An
append inserts the event at `expected_seq + 1` and its commands under
derived ids; the primary key (workflow_id, seq) is the optimistic lock,
and its `IntegrityError` is the conflict (`ca.Conflict`), as is an
`expected_seq` whose event is not there (a writer ahead of the log). Every time is
`ca.now()`, the request's simulated tick; every query that returns rows
has an ORDER BY. The store has no `synchronous()` nor `connection` (the
pool owns the connections) and its dump has no `store_integrity`: the SDK
answers `open` with null and checks the file itself.
"""

from sqlalchemy import and_, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

import bugs
import crashsim_adapter as ca
from engine import create_tables, read_all, sqlite_engine
from tables import events, outbox, store_metadata

# An event in the protocol's order (ca.EVENT).
EVENT = (events.c.workflow_id, events.c.seq, events.c.kind, events.c.payload)

# An outbox row in the protocol's order (ca.OUTBOX).
ROW = (
    outbox.c.command_id,
    outbox.c.workflow_id,
    outbox.c.event_seq,
    outbox.c.kind,
    outbox.c.payload,
    outbox.c.processed_at.is_not(None),
    outbox.c.result,
)

# A row's retry state in the protocol's order (ca.TIMER).
TIMER = (
    outbox.c.command_id,
    outbox.c.workflow_id,
    outbox.c.attempts,
    outbox.c.next_attempt_at,
    outbox.c.dead_lettered_at,
    outbox.c.last_error,
    outbox.c.processed_at.is_not(None),
)


def due(now):
    """Rows a worker may take at `now`: not done, not dead-lettered, and
    their retry timer (if any) has passed."""
    return and_(
        outbox.c.processed_at.is_(None),
        outbox.c.dead_lettered_at.is_(None),
        or_(outbox.c.next_attempt_at.is_(None), outbox.c.next_attempt_at <= now),
    )


def unmarked(result):
    """A row `mark_done` may change: not yet done, or done without the
    result that has now come; never a dead-lettered one."""
    open_row = outbox.c.processed_at.is_(None)
    if result is not None:
        open_row = or_(open_row, outbox.c.result.is_(None))
    return and_(open_row, outbox.c.dead_lettered_at.is_(None))


def timers_query():
    return (
        select(*TIMER)
        .where(or_(outbox.c.attempts > 0, outbox.c.dead_lettered_at.is_not(None)))
        .order_by(outbox.c.id)
    )


class Store:
    def __init__(self, settings):
        self.engine = sqlite_engine(settings.store)

    @classmethod
    def setup(cls, settings):
        create_tables(settings.store, store_metadata)

    @classmethod
    def dump(cls, settings):
        return read_all(
            settings.store,
            {
                "events": select(*EVENT).order_by(events.c.workflow_id, events.c.seq),
                "outbox": select(*ROW).order_by(outbox.c.id),
                "timers": timers_query(),
            },
        )

    # The append: one transaction, the event and its commands.

    def append(self, workflow_id, expected_seq, kind, payload, commands):
        seq = expected_seq + 1
        with self.engine.begin() as conn:
            if expected_seq > 0 and not self.has_event(conn, workflow_id, expected_seq):
                # Ahead of the log: the event it decided from is not there.
                raise ca.Conflict(f"{workflow_id} has no event {expected_seq}")
            try:
                self.insert_event(conn, workflow_id, seq, kind, payload)
            except IntegrityError as error:
                if not bugs.on("retry_next_seq"):
                    raise ca.Conflict(
                        f"stale append: {workflow_id} is past seq {expected_seq}"
                    ) from error
                # "Another writer got there first: append after it."
                head = select(func.max(events.c.seq)).where(
                    events.c.workflow_id == workflow_id
                )
                seq = conn.scalar(head) + 1
                self.insert_event(conn, workflow_id, seq, kind, payload)
            ids = [ca.command_id(workflow_id, seq, i) for i in range(len(commands))]
            if commands:
                conn.execute(
                    insert(outbox),
                    [
                        {
                            "command_id": command_id,
                            "workflow_id": workflow_id,
                            "event_seq": seq,
                            "kind": command_kind,
                            "payload": command_payload,
                        }
                        for command_id, (command_kind, command_payload) in zip(
                            ids, commands, strict=True
                        )
                    ],
                )
        return seq, ids

    @staticmethod
    def has_event(conn, workflow_id, seq):
        found = select(events.c.seq).where(
            events.c.workflow_id == workflow_id, events.c.seq == seq
        )
        return conn.execute(found).first() is not None

    @staticmethod
    def insert_event(conn, workflow_id, seq, kind, payload):
        conn.execute(
            insert(events).values(
                workflow_id=workflow_id,
                seq=seq,
                kind=kind,
                payload=payload,
                created_at=ca.now(),
            )
        )

    # Reads.

    def load(self, workflow_id):
        with self.engine.connect() as conn:
            return conn.execute(
                select(*EVENT)
                .where(events.c.workflow_id == workflow_id)
                .order_by(events.c.seq)
            ).all()

    def heads(self):
        last = (
            select(events.c.workflow_id, func.max(events.c.seq).label("seq"))
            .group_by(events.c.workflow_id)
            .subquery()
        )
        done = (
            select(func.count())
            .where(
                outbox.c.workflow_id == last.c.workflow_id,
                outbox.c.event_seq == last.c.seq,
                outbox.c.processed_at.is_not(None),
            )
            .scalar_subquery()
        )
        query = (
            select(last.c.workflow_id, last.c.seq, events.c.kind, done)
            .join(
                events,
                and_(
                    events.c.workflow_id == last.c.workflow_id,
                    events.c.seq == last.c.seq,
                ),
            )
            .order_by(last.c.workflow_id)
        )
        with self.engine.connect() as conn:
            return conn.execute(query).all()

    def commands(self, workflow_id, event_seq):
        with self.engine.connect() as conn:
            return conn.execute(
                select(*ROW)
                .where(
                    outbox.c.workflow_id == workflow_id,
                    outbox.c.event_seq == event_seq,
                )
                .order_by(outbox.c.id)
            ).all()

    def pending(self, limit):
        with self.engine.connect() as conn:
            return conn.execute(
                select(*ROW).where(due(ca.now())).order_by(outbox.c.id).limit(limit)
            ).all()

    def mark_done(self, command_id, result):
        marked = (
            update(outbox)
            .where(outbox.c.command_id == command_id, unmarked(result))
            .values(
                processed_at=func.coalesce(outbox.c.processed_at, ca.now()),
                result=result,
            )
        )
        if bugs.on("mark_done_no_commit"):
            with self.engine.connect() as conn:  # "connect() commits, surely"
                return conn.execute(marked).rowcount == 1
        with self.engine.begin() as conn:
            return conn.execute(marked).rowcount == 1

    # Leases: time is the request's tick, ca.now().

    def claim(self, owner, lease_ticks, limit):
        now = ca.now()
        expires = now + lease_ticks
        free = or_(outbox.c.lease_expires.is_(None), outbox.c.lease_expires <= now)
        with self.engine.begin() as conn:
            rows = conn.execute(
                select(outbox.c.id, outbox.c.lease_token, *ROW)
                .where(due(now), free)
                .order_by(outbox.c.id)
                .limit(limit)
            ).all()
            if rows:
                conn.execute(
                    update(outbox)
                    .where(outbox.c.id.in_([row.id for row in rows]))
                    .values(
                        lease_owner=owner,
                        lease_expires=expires,
                        lease_token=outbox.c.lease_token + 1,
                    )
                )
        return [(tuple(row[2:]), row.lease_token + 1, expires) for row in rows]

    def mark_done_leased(self, command_id, token, result):
        with self.engine.begin() as conn:
            return (
                conn.execute(
                    update(outbox)
                    .where(
                        outbox.c.command_id == command_id,
                        outbox.c.lease_token == token,
                        unmarked(result),
                    )
                    .values(
                        processed_at=func.coalesce(outbox.c.processed_at, ca.now()),
                        result=result,
                    )
                ).rowcount
                == 1
            )

    # Retry timers: time is the request's tick, ca.now().

    def schedule_retry(self, command_id, token, error, policy, jitter_permille):
        now = ca.now()
        retryable = [
            outbox.c.command_id == command_id,
            outbox.c.processed_at.is_(None),
            outbox.c.dead_lettered_at.is_(None),
        ]
        if token is not None:  # only the lease's current holder
            retryable.append(outbox.c.lease_token == token)
        with self.engine.begin() as conn:
            row = conn.execute(
                select(outbox.c.id, outbox.c.attempts).where(*retryable)
            ).first()
            if row is None:
                return None  # done, dead-lettered, or the lease passed on
            attempts = row.attempts + 1
            dead = attempts >= policy.max_attempts
            changes = {
                "attempts": attempts,
                "last_error": error,
                "next_attempt_at": None
                if dead
                else now + policy.delay(attempts, jitter_permille),
                "dead_lettered_at": now if dead else None,
            }
            if token is not None:  # the lease is released
                changes.update(lease_owner=None, lease_expires=None)
            conn.execute(update(outbox).where(outbox.c.id == row.id).values(changes))
        return attempts, changes["next_attempt_at"], dead

    def timers(self):
        with self.engine.connect() as conn:
            return conn.execute(timers_query()).all()
