"""Retry timers and de-dup retention (the `retries` capability): the SDK
declares it only for a store class with both timer methods and dispatches
`schedule_retry`, `timers` and the receiver's `purge_dedup` with the
request's tick as the time; the example's timer SQL hides a row until its
timer, dead-letters it at max_attempts (never pending, never done again),
fences under leases, and its receiver stamps and purges de-dup records
(`--bug early_dedup_purge`: far too early)."""

import sqlite3
import subprocess
import sys

from tests.driver import TOY, AdapterCase, append_two, request

POLICY = {"max_attempts": 3, "backoff_base_ticks": 10, "backoff_cap_ticks": 25}


class SdkRetriesTest(AdapterCase):
    def test_the_capability_is_declared_only_with_the_timer_methods(self):
        self.assertEqual(
            self.spawn("retries", script=TOY).hello["capabilities"], ["retries", "fork"]
        )
        self.assertEqual(self.spawn("step", script=TOY).hello["capabilities"], ["fork"])

    def test_schedule_retry_and_timers_are_dispatched_with_the_tick(self):
        toy = self.spawn("retries", script=TOY)
        self.assertEqual(toy.kind("timers"), "invalid")  # before `open`
        toy.ok("open", role="store")
        fields = {"error": "busy", "policy": POLICY, "jitter_permille": 500}
        answer = toy.ok("schedule_retry", tick=100, command_id="w:1:0", **fields)
        # No token: attempt 2, delay 20 plus half of it.
        self.assertEqual(
            answer,
            {
                "retried": {
                    "attempts": 2,
                    "next_attempt_at": 130,
                    "dead_lettered": False,
                }
            },
        )
        fenced = toy.ok("schedule_retry", tick=100, command_id="w", token=1, **fields)
        self.assertEqual(fenced["retried"]["next_attempt_at"], 115)
        self.assertEqual(
            toy.ok("schedule_retry", command_id="done", **fields), {"retried": None}
        )
        dead = toy.ok("schedule_retry", command_id="dead", **fields)["retried"]
        self.assertEqual(
            dead, {"attempts": 3, "next_attempt_at": None, "dead_lettered": True}
        )
        timers = toy.ok("timers", tick=77)["timers"]
        self.assertEqual(timers[0]["next_attempt_at"], 77)
        self.assertIs(timers[0]["done"], False)
        self.assertEqual(timers[1]["dead_lettered_at"], 9)
        self.assertEqual(
            toy.error("schedule_retry", command_id="x", error="e")["kind"], "invalid"
        )

    def test_the_receiver_purges_through_the_sdk(self):
        toy = self.spawn("retries", script=TOY)
        toy.ok("open", role="receiver")
        answer = toy.ok("purge_dedup", tick=500, now=500, retention_ticks=120)
        self.assertEqual(answer, {"removed": 380})

    def test_without_the_capability_the_timer_ops_are_unknown(self):
        toy = self.spawn("step", script=TOY)
        toy.ok("open", role="store")
        self.assertEqual(toy.kind("timers"), "unsupported")
        self.assertEqual(
            toy.kind("schedule_retry", command_id="x", error="e", policy=POLICY),
            "unsupported",
        )

    def test_a_store_with_one_timer_method_is_refused_before_hello(self):
        finished = subprocess.run(
            [sys.executable, TOY, "half_retries"],
            input=b"",
            capture_output=True,
            timeout=10,
        )
        self.assertNotEqual(finished.returncode, 0)
        self.assertEqual(finished.stdout, b"")
        self.assertIn(b"lacks timers", finished.stderr)

    def test_the_hello_says_whether_the_run_has_timers_and_a_retention(self):
        toy = self.spawn("retries", script=TOY, retries=True, dedup_retention=True)
        self.assertEqual(toy.hello["capabilities"], ["retries", "fork"])


class ExampleRetriesTest(AdapterCase):
    def store(self, *args, leases=False):
        """A store connection of a timer run with the commands w:1:0, w:1:1."""
        self.setup_example(*args, retries=True, leases=leases)
        store = self.spawn(*args, retries=True, leases=leases)
        store.ok("open", role="store")
        append_two(store)
        return store

    def retry(self, store, tick, command_id="w:1:0", token=None, error="busy"):
        fields = {"command_id": command_id, "error": error, "policy": POLICY}
        if token is not None:
            fields["token"] = token
        return store.ok("schedule_retry", tick=tick, jitter_permille=0, **fields)[
            "retried"
        ]

    def pending(self, store, tick):
        rows = store.ok("pending", tick=tick, limit=10)["rows"]
        return [row["command_id"] for row in rows]

    def columns(self, table, name):
        with sqlite3.connect(f"{self.dir}/{name}") as conn:
            names = conn.execute("SELECT name FROM pragma_table_info(?)", (table,))
            return {name for (name,) in names}

    def test_the_example_declares_retries(self):
        self.assertEqual(
            self.spawn().hello["capabilities"], ["leases", "retries", "backup", "fork"]
        )

    def test_columns_only_in_runs_that_ask(self):
        self.setup_example()
        self.assertNotIn("next_attempt_at", self.columns("outbox", "store.db"))
        self.assertNotIn("recorded_at", self.columns("dedup", "receiver.db"))
        self.setup_example(retries=True, dedup_retention=True)
        self.setup_example(retries=True, dedup_retention=True)  # nothing to add
        timer = {"attempts", "next_attempt_at", "last_error", "dead_lettered_at"}
        self.assertEqual(self.columns("outbox", "store.db") & timer, timer)
        self.assertIn("recorded_at", self.columns("dedup", "receiver.db"))

    def test_a_timer_hides_the_row_until_due_then_the_dead_letter_for_good(self):
        store = self.store()
        first = self.retry(store, 100)
        self.assertEqual(
            first, {"attempts": 1, "next_attempt_at": 110, "dead_lettered": False}
        )
        self.assertEqual(self.pending(store, 109), ["w:1:1"])
        self.assertEqual(self.pending(store, 110), ["w:1:0", "w:1:1"])
        self.assertEqual(self.retry(store, 110)["next_attempt_at"], 130)
        third = self.retry(store, 200, error="still busy")
        self.assertEqual(
            third, {"attempts": 3, "next_attempt_at": None, "dead_lettered": True}
        )
        self.assertEqual(self.pending(store, 10**6), ["w:1:1"])
        self.assertIsNone(self.retry(store, 300))  # dead is dead
        done = store.ok("mark_done", command_id="w:1:0", result="r")
        self.assertEqual(done, {"changed": False})
        timers = store.ok("timers")["timers"]
        self.assertEqual(
            timers,
            [
                {
                    "command_id": "w:1:0",
                    "workflow_id": "w",
                    "attempts": 3,
                    "next_attempt_at": None,
                    "dead_lettered_at": 200,
                    "last_error": "still busy",
                    "done": False,
                }
            ],
        )
        self.assertEqual(self.dump(retries=True)["timers"], timers)

    def test_a_done_row_takes_no_timer(self):
        store = self.store()
        self.assertTrue(
            store.ok("mark_done", command_id="w:1:0", result="r")["changed"]
        )
        self.assertIsNone(self.retry(store, 5))
        self.assertEqual(store.ok("timers")["timers"], [])

    def test_with_leases_only_the_holder_reschedules_and_releases(self):
        store = self.store(leases=True)

        def claim(tick, owner):
            claimed = store.ok(
                "claim", tick=tick, owner=owner, lease_ticks=50, limit=5
            )["claimed"]
            return [(c["row"]["command_id"], c["token"]) for c in claimed]

        self.assertEqual(claim(0, "a")[0], ("w:1:0", 1))
        self.assertEqual(claim(60, "b")[0], ("w:1:0", 2))
        self.assertIsNone(self.retry(store, 61, token=1))  # the stale holder
        self.assertEqual(self.retry(store, 62, token=2)["next_attempt_at"], 72)
        self.assertNotIn(("w:1:0", 3), claim(71, "c"))  # released, not yet due
        self.assertEqual(claim(72, "c"), [("w:1:0", 3)])

    def receiver(self, *args):
        self.setup_example(*args, dedup_retention=True)
        receiver = self.spawn(*args, dedup_retention=True)
        receiver.ok("open", role="receiver")
        for tick, key in ((10, "k1"), (500, "k2")):
            handled = receiver.ok(
                "handle", tick=tick, request=request(key, "lock_budget", "{}")
            )
            self.assertEqual(handled["outcome"], "applied")
        return receiver

    def test_the_receiver_stamps_and_purges_only_old_records(self):
        receiver = self.receiver()
        with sqlite3.connect(f"{self.dir}/receiver.db") as conn:
            stamped = conn.execute("SELECT key, recorded_at FROM dedup ORDER BY key")
            self.assertEqual(stamped.fetchall(), [("k1", 10), ("k2", 500)])
        purge = {"now": 600, "retention_ticks": 500}
        self.assertEqual(receiver.ok("purge_dedup", tick=600, **purge), {"removed": 1})
        self.assertEqual(receiver.ok("purge_dedup", tick=600, **purge), {"removed": 0})
        again = receiver.ok("handle", request=request("k2", "lock_budget", "{}"))
        self.assertEqual(again["outcome"], "duplicate")

    def test_early_dedup_purge_forgets_records_a_retry_still_needs(self):
        receiver = self.receiver("--bug", "early_dedup_purge")
        purge = {"now": 600, "retention_ticks": 500}
        self.assertEqual(receiver.ok("purge_dedup", tick=600, **purge), {"removed": 2})
        again = receiver.ok("handle", request=request("k2", "lock_budget", "{}"))
        self.assertEqual(again["outcome"], "applied")
