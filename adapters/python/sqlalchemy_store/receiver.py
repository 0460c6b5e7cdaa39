"""receiver: the idempotent receiver, written with SQLAlchemy Core and
served at `call` granularity: one `handle` per delivery.

A delivery is one `engine.begin()` block: the key's de-dup record is
looked up; a new key's effect (numbered MAX(effect_id) + 1, its result from
`ca.perform`) and its record are inserted together, so no kill can leave
one without the other. A known key with the same core parameters is a
duplicate (its result again), with others a conflict. Keys are compared
exactly, as sent. Each record carries the tick it was applied at, and
`purge_dedup` deletes those past the retention it is given.
"""

from sqlalchemy import func, insert, select

import bugs
import crashsim_adapter as ca
from engine import create_tables, read_all, sqlite_engine
from tables import dedup, effects, receiver_metadata


def receiver_engine(settings):
    if bugs.on("pragmas_one_engine"):
        # "The receiver is its own service: its own engine, and the docs'
        # transaction recipe." The PRAGMA listener stayed with the store's.
        return sqlite_engine(settings.receiver, pragmas=False)
    return sqlite_engine(settings.receiver)


class Receiver:
    def __init__(self, settings):
        self.engine = receiver_engine(settings)
        self.hotel_failure = settings.hotel_failure

    @classmethod
    def setup(cls, settings):
        # By the deployment's schema step, with the PRAGMAs: the file is in
        # WAL mode whichever engine opens it later.
        create_tables(settings.receiver, receiver_metadata)

    @classmethod
    def dump(cls, settings):
        return read_all(
            settings.receiver,
            {
                "effects": select(
                    effects.c.effect_id,
                    effects.c.key,
                    effects.c.kind,
                    effects.c.payload,
                    effects.c.result,
                ).order_by(effects.c.effect_id),
                "dedup": select(
                    dedup.c.key, dedup.c.digest, dedup.c.result, dedup.c.effect_id
                ).order_by(dedup.c.key),
            },
        )

    def handle(self, request):
        digest = ca.core_digest(request.kind, request.payload)
        apart = bugs.on("dedup_second_block")
        with self.engine.begin() as conn:
            seen = conn.execute(
                select(dedup.c.digest, dedup.c.result).where(dedup.c.key == request.key)
            ).first()
            if seen is not None:
                if seen.digest != digest:
                    return "conflict", None, None
                return "duplicate", seen.result, None
            effect_id, result = self.apply(conn, request)
            if not apart:
                self.remember(conn, request, digest, effect_id, result)
        if apart:
            # "The effect is what matters: commit it, then remember the key."
            with self.engine.begin() as conn:
                self.remember(conn, request, digest, effect_id, result)
        return "applied", result, effect_id

    def apply(self, conn, request):
        """The business effect, numbered after the last one."""
        effect_id = conn.scalar(
            select(func.coalesce(func.max(effects.c.effect_id), 0) + 1)
        )
        result = ca.perform(
            request.kind, request.payload, effect_id, self.hotel_failure
        )
        conn.execute(
            insert(effects).values(
                effect_id=effect_id,
                key=request.key,
                kind=request.kind,
                payload=request.payload,
                result=result,
            )
        )
        return effect_id, result

    @staticmethod
    def remember(conn, request, digest, effect_id, result):
        """The key's de-dup record, stamped with the tick."""
        conn.execute(
            insert(dedup).values(
                key=request.key,
                digest=digest,
                result=result,
                effect_id=effect_id,
                recorded_at=ca.now(),
            )
        )

    def purge_dedup(self, now, retention_ticks):
        # Records older than the retention go; it is above the retry
        # horizon, so no producer still retries their commands.
        with self.engine.begin() as conn:
            return conn.execute(
                dedup.delete().where(
                    dedup.c.recorded_at < max(now - retention_ticks, 0)
                )
            ).rowcount
