"""SQLAlchemy's exceptions wrap sqlite3's (as `.orig` and as `__cause__`):
the SDK answers them by the sqlite3 error inside, so a lock held elsewhere
is `busy` and a full disk `environment`, in process and over pipes."""

import sqlite3
import time

import sqlalchemy.exc
from sqlalchemy import text

import crashsim_adapter as ca
from engine import sqlite_engine
from sqlalchemy_store.tests.common import ExampleCase
from tests.driver import append_two


class WrappedErrorTest(ExampleCase):
    def test_a_lock_held_elsewhere_is_busy(self):
        engine = sqlite_engine(self.settings().store)
        holder = sqlite3.connect(f"{self.dir}/store.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with self.assertRaises(sqlalchemy.exc.OperationalError) as caught:
                with engine.begin():
                    pass
        finally:
            holder.execute("ROLLBACK")
            holder.close()
            engine.dispose()
        self.assertIsInstance(caught.exception.orig, sqlite3.OperationalError)
        self.assertEqual(ca.error_kind(caught.exception), "busy")

    def test_a_full_disk_is_environment(self):
        engine = sqlite_engine(self.settings().store)
        with self.assertRaises(sqlalchemy.exc.OperationalError) as caught:
            with engine.begin() as conn:
                conn.execute(text("CREATE TABLE t (v)"))
                conn.execute(text("PRAGMA max_page_count = 3"))
                for _ in range(100):
                    conn.execute(text("INSERT INTO t VALUES (zeroblob(4000))"))
        engine.dispose()
        self.assertEqual(ca.error_kind(caught.exception), "environment")

    def test_an_unhandled_integrity_error_is_failed(self):
        engine = sqlite_engine(self.settings().store)
        with self.assertRaises(sqlalchemy.exc.IntegrityError) as caught:
            with engine.begin() as conn:
                conn.execute(text("CREATE TABLE t (k PRIMARY KEY)"))
                conn.execute(text("INSERT INTO t VALUES (1), (1)"))
        engine.dispose()
        self.assertEqual(ca.error_kind(caught.exception), "failed")

    def test_the_adapter_answers_busy_at_once(self):
        store = self.opened("store")
        holder = sqlite3.connect(f"{self.dir}/store.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        try:
            self.assertEqual(append_two(store, method="error")["kind"], "busy")
            self.assertEqual(store.error("heads")["kind"], "busy")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        self.assertLess(time.monotonic() - started, 2)  # busy timeout 0
        self.assertEqual(append_two(store)["seq"], 1)  # the pool recovered
