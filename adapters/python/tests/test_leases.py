"""Leases (the `leases` capability): the SDK declares it only for a store
class with both lease methods and dispatches `claim` and `mark_done_leased`
with the request's tick as the time; the example's lease SQL skips live
leases, takes expired ones over with a greater token, and counts an
acknowledgement only with the current token (`--bug unfenced_mark_done`:
with any token)."""

import sqlite3
import subprocess
import sys

from tests.driver import TOY, AdapterCase, append_two


class SdkLeasesTest(AdapterCase):
    def test_the_capability_is_declared_only_with_the_lease_methods(self):
        self.assertEqual(
            self.spawn("leases", script=TOY).hello["capabilities"], ["leases", "fork"]
        )
        self.assertEqual(self.spawn("step", script=TOY).hello["capabilities"], ["fork"])

    def test_claim_and_mark_done_leased_are_dispatched_with_the_tick(self):
        toy = self.spawn("leases", script=TOY)
        self.assertEqual(
            toy.kind("claim", owner="a", lease_ticks=1, limit=1), "invalid"
        )
        toy.ok("open", role="store")
        claimed = toy.ok("claim", tick=40, owner="worker-0.0", lease_ticks=100, limit=2)
        row = {
            "command_id": "w:1:0",
            "workflow_id": "w",
            "event_seq": 1,
            "kind": "lock_budget",
            "payload": "{}",
            "done": False,
            "result": None,
        }
        self.assertEqual(
            claimed,
            {
                "claimed": [
                    {"row": row, "token": 7, "expires": 140},
                    {"row": row, "token": 8, "expires": 140},
                ]
            },
        )
        none = toy.ok("claim", tick=41, owner="nobody", lease_ticks=1, limit=2)
        self.assertEqual(none, {"claimed": []})
        answer = toy.ok("mark_done_leased", command_id="w:1:0", token=8, result="r")
        self.assertEqual(answer, {"changed": True})
        stale = toy.ok("mark_done_leased", command_id="w:1:0", token=7, result="r")
        self.assertEqual(stale, {"changed": False})
        self.assertEqual(toy.error("claim", owner="x", limit=1)["kind"], "invalid")

    def test_without_the_capability_the_lease_ops_are_unknown(self):
        toy = self.spawn("step", script=TOY)
        toy.ok("open", role="store")
        self.assertEqual(
            toy.kind("claim", owner="a", lease_ticks=1, limit=1), "unsupported"
        )

    def test_a_store_with_one_lease_method_is_refused_before_hello(self):
        finished = subprocess.run(
            [sys.executable, TOY, "half_leases"],
            input=b"",
            capture_output=True,
            timeout=10,
        )
        self.assertNotEqual(finished.returncode, 0)
        self.assertEqual(finished.stdout, b"")
        self.assertIn(b"lacks mark_done_leased", finished.stderr)


class ExampleLeasesTest(AdapterCase):
    def store(self, *args):
        """A store connection of a lease run with the commands w:1:0, w:1:1."""
        self.setup_example(*args, leases=True)
        store = self.spawn(*args, leases=True)
        store.ok("open", role="store")
        append_two(store)
        return store

    def claim(self, store, tick, owner, limit=1, lease_ticks=50):
        claimed = store.ok(
            "claim", tick=tick, owner=owner, lease_ticks=lease_ticks, limit=limit
        )["claimed"]
        return [(c["row"]["command_id"], c["token"], c["expires"]) for c in claimed]

    def ack(self, store, token, tick=0, command_id="w:1:0"):
        return store.ok(
            "mark_done_leased",
            tick=tick,
            command_id=command_id,
            token=token,
            result="r",
        )["changed"]

    def columns(self):
        with sqlite3.connect(f"{self.dir}/store.db") as conn:
            names = conn.execute("SELECT name FROM pragma_table_info('outbox')")
            return {name for (name,) in names}

    def test_the_example_declares_leases(self):
        self.assertEqual(
            self.spawn().hello["capabilities"], ["leases", "retries", "backup", "fork"]
        )

    def test_lease_columns_only_in_runs_with_leases(self):
        self.setup_example()
        self.assertNotIn("lease_token", self.columns())
        self.setup_example(leases=True)
        self.setup_example(leases=True)  # again: nothing to add
        lease = {"lease_owner", "lease_expires", "lease_token"}
        self.assertEqual(self.columns() & lease, lease)

    def test_a_claim_skips_live_leases_oldest_first(self):
        store = self.store()
        self.assertEqual(self.claim(store, 10, "worker-0.0"), [("w:1:0", 1, 60)])
        self.assertEqual(
            self.claim(store, 59, "worker-1.0", limit=5), [("w:1:1", 1, 109)]
        )
        self.assertEqual(self.claim(store, 59, "worker-2.0", limit=5), [])

    def test_an_expired_lease_is_reclaimed_with_a_greater_token(self):
        store = self.store()
        self.claim(store, 0, "worker-0.0")
        self.assertEqual(self.claim(store, 50, "worker-1.0"), [("w:1:0", 2, 100)])
        self.assertEqual(self.claim(store, 100, "worker-0.1"), [("w:1:0", 3, 150)])

    def test_only_the_current_token_acknowledges(self):
        store = self.store()
        self.claim(store, 0, "worker-0.0")
        self.claim(store, 60, "worker-1.0")
        self.assertFalse(self.ack(store, token=1, tick=70))  # the late holder
        self.assertTrue(self.ack(store, token=2, tick=71))
        self.assertFalse(self.ack(store, token=2, tick=72))  # done is done
        self.assertEqual(self.claim(store, 1000, "worker-2.0"), [("w:1:1", 1, 1050)])

    def test_an_expired_lease_nobody_took_still_acknowledges(self):
        store = self.store()
        self.claim(store, 0, "worker-0.0")
        self.assertTrue(self.ack(store, token=1, tick=500))

    def test_unfenced_mark_done_lets_the_late_holder_count(self):
        store = self.store("--bug", "unfenced_mark_done")
        self.claim(store, 0, "worker-0.0")
        self.claim(store, 60, "worker-1.0")
        self.assertTrue(self.ack(store, token=1, tick=70))
