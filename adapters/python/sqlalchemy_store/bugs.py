"""bugs: the mistakes `--bug NAME[,NAME...]` switches on in the SQLAlchemy
example, each a few lines from the clean code (search `bugs.on(` in the
other modules), and what crashsim reports for it.

  pragmas_one_engine   The receiver builds its own engine with the
                       transaction recipe but without the PRAGMA listener,
                       which only the store's engine got: its connections
                       run SQLite's default `synchronous`. Where the build's
                       default is weaker than asked (scenario key [sqlite]
                       default_synchronous = "normal", power_loss), its
                       commits are acknowledged unsynced and lost in a power
                       cut. -> I9 (the unsynced commits and the effects
                       lost; and I1), on power_loss.
  autocommit_engine    The engines are created with
                       isolation_level="AUTOCOMMIT" ("pysqlite's transactions
                       are broken; let SQLite commit") and without the BEGIN
                       listener: each statement inside `engine.begin()`
                       commits on its own, so a process killed inside an
                       append leaves an event without its commands, and one
                       killed inside a delivery an effect without its
                       de-dup record. -> I5 and I1 (and I2, I10), on smoke
                       and crash_storm.
  retry_next_seq       A unique violation on (workflow_id, seq) is taken for
                       a harmless race and the event is inserted again after
                       the head: a stale writer's append lands anyway.
                       -> I3 (and I10), on contention.
  dedup_second_block   The receiver commits the effect in one
                       `engine.begin()` block and its de-dup record in a
                       second: a kill between the two applies the
                       redelivery again. -> I2, on smoke and crash_storm.
  mark_done_no_commit  `mark_done` runs its UPDATE in `engine.connect()`
                       and never calls `conn.commit()` (SQLAlchemy 1.x's
                       autocommit habit): the block rolls it back on
                       exit, yet answers that the row changed. -> I6 (and
                       I10), on smoke.
"""

import argparse

KNOWN = (
    "pragmas_one_engine",
    "autocommit_engine",
    "retry_next_seq",
    "dedup_second_block",
    "mark_done_no_commit",
)

ACTIVE = frozenset()


def on(name):
    """Whether the bug `name` is switched on in this process."""
    if name not in KNOWN:
        raise KeyError(name)
    return name in ACTIVE


def parse(argv, usage):
    """Switches on the bugs `--bug` names; returns them."""
    global ACTIVE
    parser = argparse.ArgumentParser(
        description=usage,
        epilog=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--bug", default="", help="known mistakes, comma-separated")
    names = frozenset(n for n in parser.parse_args(argv).bug.split(",") if n)
    unknown = sorted(names.difference(KNOWN))
    if unknown:
        parser.error(f"unknown bug {', '.join(unknown)}; known: {', '.join(KNOWN)}")
    ACTIVE = names
    return names
