"""Each --bug of the SQLAlchemy example changes what it should, and only
with the switch on: the same requests on the clean example and the bugged
one, in process (the bug's module-level switch) or over pipes."""

import sqlite3
from unittest import mock

from sqlalchemy import text

import crashsim_adapter as ca
from engine import sqlite_engine
from receiver import Receiver
from sqlalchemy_store.tests.common import ExampleCase, bug, request
from store import Store
from tests.driver import append_two


def rows(path, query):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


class BugTest(ExampleCase):
    def setUp(self):
        super().setUp()
        self.hello = self.settings(synchronous="off")
        Store.setup(self.hello)
        Receiver.setup(self.hello)

    def test_pragmas_one_engine_leaves_the_receiver_on_the_default(self):
        def level(engine):
            with engine.connect() as conn:
                return conn.execute(text("PRAGMA synchronous")).scalar()

        clean = level(Receiver(self.hello).engine)
        with bug("pragmas_one_engine"):
            bugged = level(Receiver(self.hello).engine)
            store = level(Store(self.hello).engine)
        self.assertEqual((clean, store), (0, 0))  # as the hello asks
        self.assertNotEqual(bugged, 0)  # this SQLite's compiled-in default

    def test_autocommit_engine_commits_statement_by_statement(self):
        def append(store):
            # The second command cannot be stored (NOT NULL payload): the
            # append fails after its event was inserted.
            commands = [("a", "{}"), ("b", None)]
            with self.assertRaises(Exception):  # noqa: B017
                store.append("w", 0, "e", "{}", commands)
            return rows(self.hello.store.path, "SELECT seq FROM events ORDER BY seq")

        self.assertEqual(append(Store(self.hello)), [])
        with bug("autocommit_engine"):
            self.assertEqual(append(Store(self.hello)), [(1,)])

    def test_retry_next_seq_lands_a_stale_append(self):
        store = Store(self.hello)
        store.append("w", 0, "e", "{}", [])
        with self.assertRaises(ca.Conflict):
            store.append("w", 0, "stale", "{}", [("c", "{}")])
        with bug("retry_next_seq"):
            self.assertEqual(
                store.append("w", 0, "stale", "{}", [("c", "{}")]), (2, ["w:2:0"])
            )

    def test_dedup_second_block_commits_the_effect_alone(self):
        def deliver():
            receiver = Receiver(self.hello)
            killed = RuntimeError("killed before the de-dup record")
            with mock.patch.object(Receiver, "remember", side_effect=killed):
                with self.assertRaises(RuntimeError):
                    receiver.handle(request("k:1:0"))
            return rows(self.hello.receiver.path, "SELECT key FROM effects ORDER BY 1")

        self.assertEqual(deliver(), [])
        with bug("dedup_second_block"):
            self.assertEqual(deliver(), [("k:1:0",)])


class MarkDoneTest(ExampleCase):
    def test_mark_done_no_commit_answers_changed_and_keeps_nothing(self):
        def observe(*args):
            store = self.opened("store", *args)
            append_two(store)
            marked = store.ok("mark_done", command_id="w:1:0", result="{}")
            pending = store.ok("pending", limit=5)["rows"]
            return marked, [row["command_id"] for row in pending]

        self.assertEqual(observe(), ({"changed": True}, ["w:1:1"]))
        self.tearDown()
        self.setUp()
        bugged = observe("--bug", "mark_done_no_commit")
        self.assertEqual(bugged, ({"changed": True}, ["w:1:0", "w:1:1"]))


class EngineTest(ExampleCase):
    def test_every_pooled_connection_gets_the_pragmas(self):
        hello = self.settings(synchronous="extra", journal_mode="delete")
        engine = sqlite_engine(hello.store)
        # Two connections out of the pool at once (the driver's, so that
        # no BEGIN IMMEDIATE of SQLAlchemy's makes the second one wait).
        one, two = engine.raw_connection(), engine.raw_connection()
        for conn in (one, two):
            pragmas = [
                conn.cursor().execute(f"PRAGMA {name}").fetchone()[0]
                for name in ("synchronous", "busy_timeout", "journal_mode")
            ]
            self.assertEqual(pragmas, [3, 0, "delete"])
            conn.close()
        engine.dispose()
