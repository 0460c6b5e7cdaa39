"""The SDK's helpers against values crashsim's Rust reference computes
(src/store/service.rs, src/workflow/payload.rs), in process."""

import json
import sqlite3
import unittest

import crashsim_adapter as ca

OSLO_T = '{"city":"Oslo","trip_id":"t"}'


class PerformTest(unittest.TestCase):
    def test_results_name_their_effect(self):
        self.assertEqual(ca.perform("book_hotel", OSLO_T, 9, (0, 1)), '{"ref":"HT9"}')
        self.assertEqual(
            ca.perform("book_hotel", OSLO_T, 9, (1, 1)), '{"reason":"sold_out"}'
        )
        self.assertEqual(
            ca.perform("lock_budget", '{"trip_id":"trip-007"}', 3, (0, 1)),
            '{"token":"tok-3"}',
        )
        self.assertEqual(
            ca.perform("book_flight", OSLO_T, 12, (0, 1)), '{"ref":"FL12"}'
        )
        self.assertEqual(
            ca.perform("cancel_flight", '{"ref":"FL12"}', 5, (0, 1)),
            '{"cancelled":"FL12"}',
        )
        self.assertEqual(
            ca.perform("release_budget", '{"token":"tok-1"}', 5, (0, 1)),
            '{"released":"tok-1"}',
        )

    def test_hotel_failures_match_the_reference(self):
        # Which of trip-000 .. trip-011 in Oslo are sold out at 1/4, as the
        # Rust reference computed them.
        sold_out = [
            index
            for index in range(12)
            if ca.hotel_sold_out(f"trip-{index:03}", "Oslo", (1, 4))
        ]
        self.assertEqual(sold_out, [2, 6, 11])
        failed = sum(
            ca.hotel_sold_out(f"trip-{i}", "Oslo", (1, 4)) for i in range(1000)
        )
        self.assertTrue(180 <= failed < 320, failed)
        self.assertFalse(ca.hotel_sold_out("trip-1", "Oslo", (0, 1)))
        self.assertTrue(ca.hotel_sold_out("trip-1", "Oslo", (1, 1)))
        self.assertTrue(
            ca.hotel_sold_out("trip-002", "Oslo", {"numerator": 1, "denominator": 4})
        )

    def test_fnv1a64_test_vectors(self):
        self.assertEqual(ca.fnv1a64(b""), 0xCBF29CE484222325)
        self.assertEqual(ca.fnv1a64(b"a"), 0xAF63DC4C8601EC8C)
        self.assertEqual(ca.fnv1a64(b"foobar"), 0x85944171F73967E8)

    def test_bad_requests_are_invalid(self):
        for kind, payload in [
            ("launch_rocket", "{}"),
            ("book_hotel", '{"city":"Oslo"}'),
            ("cancel_flight", "{}"),
            ("lock_budget", "[1]"),
            ("lock_budget", '{"a":1}'),
            ("lock_budget", "not json"),
            ("lock_budget", '{"a":"\\ud800"}'),
        ]:
            with self.assertRaises(ca.Invalid, msg=(kind, payload)):
                ca.perform(kind, payload, 1, (0, 1))


class CanonicalTest(unittest.TestCase):
    def test_keys_sorted_compact_serde_escapes(self):
        value = {"z": "1", "a": 'é\n\x01"\\\x7f😀\u2028', "m": "\b\f\r\t"}
        self.assertEqual(
            ca.canonical(value),
            '{"a":"é\\n\\u0001\\"\\\\\x7f😀\u2028","m":"\\b\\f\\r\\t","z":"1"}',
        )
        # What the Rust reference answered for the same cancel_flight.
        payload = json.dumps({"ref": 'é\n\x01"\\\x7f😀\u2028'})
        self.assertEqual(
            ca.perform("cancel_flight", payload, 1, (0, 1)),
            '{"cancelled":"é\\n\\u0001\\"\\\\\x7f😀\u2028"}',
        )

    def test_digest_and_ids(self):
        self.assertEqual(
            ca.core_digest("lock_budget", '{"trip_id":"trip-007"}'), "e9b41114f994f3c4"
        )
        self.assertEqual(
            ca.core_digest("release_budget", '{"token":"tok-1"}'), "23d1c5ba39ac7489"
        )
        self.assertNotEqual(ca.core_digest("a", "{}"), ca.core_digest("b", "{}"))
        self.assertEqual(ca.command_id("trip-007", 3, 0), "trip-007:3:0")


class ErrorKindTest(unittest.TestCase):
    def test_sdk_exceptions(self):
        self.assertEqual(ca.error_kind(ca.Conflict("x")), "conflict")
        self.assertEqual(ca.error_kind(ca.Busy("x")), "busy")
        self.assertEqual(ca.error_kind(ca.Invalid("x")), "invalid")
        self.assertEqual(ca.error_kind(ca.Unsupported("x")), "unsupported")
        self.assertEqual(ca.error_kind(ca.Environment("x")), "environment")
        self.assertEqual(ca.error_kind(RuntimeError("x")), "failed")
        self.assertEqual(ca.error_kind(KeyError("x")), "failed")

    def test_sqlite_errors(self):
        # Raised by hand: no error code, the message decides.
        self.assertEqual(
            ca.error_kind(sqlite3.OperationalError("database is locked")), "busy"
        )
        self.assertEqual(
            ca.error_kind(sqlite3.OperationalError("no such table")), "failed"
        )
        self.assertEqual(
            ca.error_kind(sqlite3.OperationalError("database or disk is full")),
            "environment",
        )
        # Raised by SQLite: the code decides.
        first = sqlite3.connect(":memory:", isolation_level=None)
        with self.assertRaises(sqlite3.Error) as caught:
            first.execute("INSERT INTO missing VALUES (1)")
        self.assertEqual(ca.error_kind(caught.exception), "failed")
        first.execute("CREATE TABLE t (k PRIMARY KEY)")
        first.execute("INSERT INTO t VALUES (1)")
        with self.assertRaises(sqlite3.IntegrityError) as caught:
            first.execute("INSERT INTO t VALUES (1)")
        self.assertEqual(ca.error_kind(caught.exception), "failed")

    def test_real_full_disk(self):
        # max_page_count makes SQLite answer SQLITE_FULL as a full disk would.
        db = sqlite3.connect(":memory:", isolation_level=None)
        db.execute("CREATE TABLE t (v)")
        db.execute("PRAGMA max_page_count = 2")
        with self.assertRaises(sqlite3.Error) as caught:
            for _ in range(100):
                db.execute("INSERT INTO t VALUES (zeroblob(4000))")
        self.assertEqual(ca.error_kind(caught.exception), "environment")

    def test_real_busy(self):
        import tempfile

        with tempfile.TemporaryDirectory() as directory:
            self.assertEqual(ca.error_kind(real_busy_error(directory)), "busy")


class LibraryError(Exception):
    """What a library (SQLAlchemy, Django, peewee) raises around the driver's
    error."""


def real_busy_error(directory):
    """A sqlite3 busy error as SQLite raises it (with its code)."""
    path = f"{directory}/x.db"
    holder = sqlite3.connect(path, isolation_level=None, timeout=0)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("CREATE TABLE IF NOT EXISTS t (k)")
    holder.execute("BEGIN IMMEDIATE")
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        other.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        return error
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        other.close()
    raise AssertionError("BEGIN IMMEDIATE was not refused")


class WrappedErrorKindTest(unittest.TestCase):
    """A library's exception is answered by the sqlite3 error inside it."""

    def setUp(self):
        import tempfile

        self.tmp = tempfile.TemporaryDirectory()
        self.busy = real_busy_error(self.tmp.name)
        self.assertEqual(self.busy.sqlite_errorcode & 0xFF, 5)

    def tearDown(self):
        self.tmp.cleanup()

    def raised(self, function):
        with self.assertRaises(Exception) as caught:
            function()
        return caught.exception

    def test_raise_from(self):
        def wrap():
            try:
                raise self.busy
            except sqlite3.OperationalError as error:
                raise LibraryError("(sqlite3.OperationalError) locked") from error

        self.assertEqual(ca.error_kind(self.raised(wrap)), "busy")

    def test_implicit_context_two_deep(self):
        def wrap():
            try:
                try:
                    raise self.busy
                except sqlite3.OperationalError:
                    raise LibraryError("the driver failed") from None
            except LibraryError as error:
                raise RuntimeError("the repository failed") from error

        # `from None` hid the busy error: nothing inside decides.
        self.assertEqual(ca.error_kind(self.raised(wrap)), "failed")

        def implicit():
            try:
                try:
                    raise self.busy
                except sqlite3.OperationalError:
                    raise LibraryError("the driver failed")  # noqa: B904
            except LibraryError:
                raise RuntimeError("the repository failed")  # noqa: B904

        self.assertEqual(ca.error_kind(self.raised(implicit)), "busy")

    def test_wrapped_environment_and_integrity_errors(self):
        full = sqlite3.OperationalError("database or disk is full")
        wrapper = LibraryError("wrapped")
        wrapper.__cause__ = full
        self.assertEqual(ca.error_kind(wrapper), "environment")
        wrapper.__cause__ = sqlite3.IntegrityError("UNIQUE constraint failed")
        self.assertEqual(ca.error_kind(wrapper), "failed")

    def test_our_own_error_inside_decides(self):
        wrapper = LibraryError("a listener raised")
        wrapper.__cause__ = ca.Conflict("stale")
        self.assertEqual(ca.error_kind(wrapper), "conflict")

    def test_orig_attribute(self):
        # SQLAlchemy's DBAPIError keeps the driver's error as `.orig`.
        wrapper = LibraryError("(sqlite3.OperationalError) database is locked")
        wrapper.orig = self.busy
        self.assertEqual(ca.error_kind(wrapper), "busy")
        wrapper.orig = "not an exception"
        self.assertEqual(ca.error_kind(wrapper), "failed")

    def test_a_cycle_ends(self):
        one, two = LibraryError("one"), LibraryError("two")
        one.__cause__, two.__cause__ = two, one
        self.assertEqual(ca.error_kind(one), "failed")
        one.orig = one
        two.__cause__ = None
        two.__context__ = one
        self.assertEqual(ca.error_kind(two), "failed")


if __name__ == "__main__":
    unittest.main()
