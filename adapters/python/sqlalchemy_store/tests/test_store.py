"""The SQLAlchemy example, clean, driven over pipes as crashsim drives it:
its handshake, the store's append and reads, leases, retry timers, the
receiver, and the dump the SDK completes."""

import sqlite3

import crashsim_adapter as ca
from sqlalchemy_store.tests.common import ExampleCase
from tests.driver import append_two, command, request

LOCK = '{"trip_id":"trip-007"}'
TOKEN = '{"token":"tok-1"}'


class HandshakeTest(ExampleCase):
    def test_call_granularity_with_leases_and_retries(self):
        adapter = self.spawn()
        hello = dict(adapter.hello)
        sources = hello.pop("sources")
        self.assertIn("adapters/python/sqlalchemy_store/store.py", sources)
        self.assertFalse([s for s in sources if "site-packages" in s], sources)
        self.assertEqual(
            hello,
            {
                "protocol": 1,
                "name": "sqlalchemy_store",
                "version": "1.0",
                "roles": {"store": "call", "receiver": "call"},
                "capabilities": ["leases", "retries", "fork"],
                "sqlite_version": sqlite3.sqlite_version,
                "sdk": {"name": "crashsim_adapter", "version": ca.__version__},
            },
        )
        bugged = self.spawn("--bug", "retry_next_seq,autocommit_engine")
        self.assertEqual(
            bugged.hello["name"], "sqlalchemy_store+autocommit_engine+retry_next_seq"
        )

    def test_open_cannot_tell_the_level(self):
        # The pool owns the connections: `open` answers null, and crashsim
        # judges I9 from what the store's SQLite does.
        self.assertEqual(self.opened("store").ok("ping"), {})
        for role in ("store", "receiver"):
            adapter = self.spawn()
            self.assertEqual(adapter.ok("open", role=role), {"synchronous": None})

    def test_unknown_bug_is_refused(self):
        adapter = self.spawn("--bug", "nonsense", hello=False)
        self.assertEqual(adapter.process.wait(timeout=10), 2)
        self.assertIn("unknown bug nonsense", adapter.stderr())


class StoreTest(ExampleCase):
    def test_append_then_read_everything_back(self):
        store = self.opened("store")
        self.assertEqual(
            append_two(store), {"seq": 1, "command_ids": ["w:1:0", "w:1:1"]}
        )
        self.assertEqual(
            store.ok("load", workflow_id="w")["events"],
            [{"workflow_id": "w", "seq": 1, "kind": "e", "payload": "{}"}],
        )
        self.assertEqual(store.ok("load", workflow_id="nobody"), {"events": []})
        rows = store.ok("commands", workflow_id="w", event_seq=1)["rows"]
        self.assertEqual(
            rows[0],
            {
                "command_id": "w:1:0",
                "workflow_id": "w",
                "event_seq": 1,
                "kind": "a",
                "payload": "{}",
                "done": False,
                "result": None,
            },
        )
        marked = store.ok("mark_done", command_id="w:1:0", result=TOKEN)
        self.assertEqual(marked, {"changed": True})
        again = store.ok("mark_done", command_id="w:1:0", result='{"token":"x"}')
        self.assertEqual(again, {"changed": False})
        # Done without a result first, the result is filled in once.
        for result, changed in ((None, True), (None, False), ('{"ref":"F"}', True)):
            answer = store.ok("mark_done", command_id="w:1:1", result=result)
            self.assertEqual(answer, {"changed": changed}, result)
        self.assertEqual(store.ok("pending", limit=10), {"rows": []})
        self.assertEqual(
            store.ok("heads")["heads"],
            [{"workflow_id": "w", "last_seq": 1, "kind": "e", "commands_done": 2}],
        )

    def test_heads_by_workflow_pending_by_commit(self):
        store = self.opened("store")
        for workflow_id, expected_seq in (("b", 0), ("a", 0), ("b", 1)):
            store.ok(
                "append",
                workflow_id=workflow_id,
                expected_seq=expected_seq,
                kind=f"e{expected_seq + 1}",
                payload="{}",
                commands=[command("c", "{}")],
            )
        heads = store.ok("heads")["heads"]
        self.assertEqual(
            [(h["workflow_id"], h["last_seq"], h["kind"]) for h in heads],
            [("a", 1, "e1"), ("b", 2, "e2")],
        )
        pending = store.ok("pending", limit=10)["rows"]
        self.assertEqual(
            [r["command_id"] for r in pending], ["b:1:0", "a:1:0", "b:2:0"]
        )
        self.assertEqual(len(store.ok("pending", limit=2)["rows"]), 2)

    def test_stale_and_ahead_appends_are_conflicts(self):
        store = self.opened("store")
        append_two(store)
        self.assertEqual(append_two(store, 0, method="error")["kind"], "conflict")
        self.assertEqual(append_two(store, 5, method="error")["kind"], "conflict")
        self.assertEqual(append_two(store, 1)["seq"], 2)
        # Nothing of the refused appends is left behind.
        self.assertEqual(len(store.ok("pending", limit=10)["rows"]), 4)

    def test_ids_and_payloads_are_kept_byte_for_byte(self):
        store = self.opened("store")
        odd = " Trip:é\u0301 %_'\"<b>"
        payload = '{"city":"Zürich","note":"\\u0000 \u2028"}'
        answer = store.ok(
            "append",
            workflow_id=odd,
            expected_seq=0,
            kind="k",
            payload=payload,
            commands=[command("c", payload)],
        )
        self.assertEqual(answer["command_ids"], [f"{odd}:1:0"])
        (event,) = store.ok("load", workflow_id=odd)["events"]
        self.assertEqual((event["workflow_id"], event["payload"]), (odd, payload))


class LeaseTest(ExampleCase):
    def test_claim_fences_and_expires(self):
        store = self.opened("store", leases=True)
        append_two(store)
        claimed = store.ok("claim", owner="w1", lease_ticks=100, limit=1, tick=10)
        (first,) = claimed["claimed"]
        self.assertEqual((first["token"], first["expires"]), (1, 110))
        self.assertEqual(first["row"]["command_id"], "w:1:0")
        # The next claim takes the other row; none is left before expiry.
        second = store.ok("claim", owner="w2", lease_ticks=100, limit=5, tick=20)
        self.assertEqual([c["row"]["command_id"] for c in second["claimed"]], ["w:1:1"])
        self.assertEqual(
            store.ok("claim", owner="w3", lease_ticks=100, limit=5, tick=50),
            {"claimed": []},
        )
        # Expired at 110: taken over with a greater token; the old one no
        # longer counts.
        taken = store.ok("claim", owner="w3", lease_ticks=100, limit=1, tick=110)
        self.assertEqual(taken["claimed"][0]["token"], 2)
        stale = dict(command_id="w:1:0", token=1, result=TOKEN)
        self.assertEqual(store.ok("mark_done_leased", **stale), {"changed": False})
        fresh = dict(command_id="w:1:0", token=2, result=TOKEN)
        self.assertEqual(store.ok("mark_done_leased", **fresh), {"changed": True})


class RetryTest(ExampleCase):
    POLICY = {"max_attempts": 3, "backoff_base_ticks": 40, "backoff_cap_ticks": 100}

    def retry(self, store, tick, token=None, jitter_permille=0):
        fields = dict(command_id="w:1:0", error="busy", policy=self.POLICY, tick=tick)
        if token is not None:
            fields["token"] = token
        return store.ok("schedule_retry", jitter_permille=jitter_permille, **fields)

    def test_backoff_then_dead_letter(self):
        store = self.opened("store", retries=True)
        append_two(store)
        self.assertEqual(
            self.retry(store, 100, jitter_permille=250)["retried"],
            {"attempts": 1, "next_attempt_at": 150, "dead_lettered": False},
        )
        # Not due before its timer; due after.
        due = [r["command_id"] for r in store.ok("pending", limit=5, tick=149)["rows"]]
        self.assertEqual(due, ["w:1:1"])
        due = [r["command_id"] for r in store.ok("pending", limit=5, tick=150)["rows"]]
        self.assertEqual(due, ["w:1:0", "w:1:1"])
        self.assertEqual(self.retry(store, 150)["retried"]["next_attempt_at"], 230)
        self.assertEqual(
            self.retry(store, 300)["retried"],
            {"attempts": 3, "next_attempt_at": None, "dead_lettered": True},
        )
        self.assertEqual(self.retry(store, 400), {"retried": None})
        dead = dict(command_id="w:1:0", result=TOKEN)
        self.assertEqual(store.ok("mark_done", **dead), {"changed": False})
        (timer,) = store.ok("timers")["timers"]
        self.assertEqual(
            timer,
            {
                "command_id": "w:1:0",
                "workflow_id": "w",
                "attempts": 3,
                "next_attempt_at": None,
                "dead_lettered_at": 300,
                "last_error": "busy",
                "done": False,
            },
        )
        self.assertEqual(self.dump(retries=True)["timers"], [timer])

    def test_a_retry_by_a_stale_holder_changes_nothing(self):
        store = self.opened("store", retries=True, leases=True)
        append_two(store)
        store.ok("claim", owner="w1", lease_ticks=100, limit=1, tick=0)
        store.ok("claim", owner="w2", lease_ticks=100, limit=1, tick=100)  # token 2
        self.assertEqual(self.retry(store, 120, token=1), {"retried": None})
        self.assertEqual(self.retry(store, 120, token=2)["retried"]["attempts"], 1)
        # Released: claimable again at once.
        again = store.ok("claim", owner="w3", lease_ticks=100, limit=1, tick=170)
        self.assertEqual(again["claimed"][0]["token"], 3)


class ReceiverTest(ExampleCase):
    def handle(self, receiver, key, kind="lock_budget", payload=LOCK, tick=0):
        return receiver.ok("handle", request=request(key, kind, payload), tick=tick)

    def test_applied_duplicate_conflict_and_exact_keys(self):
        receiver = self.opened("receiver", dedup_retention=True)
        self.assertEqual(
            self.handle(receiver, "trip-007:1:0"),
            {"outcome": "applied", "result": TOKEN, "effect_id": 1},
        )
        self.assertEqual(
            self.handle(receiver, "trip-007:1:0"),
            {"outcome": "duplicate", "result": TOKEN},
        )
        other = self.handle(receiver, "trip-007:1:0", payload='{"trip_id":"x"}')
        self.assertEqual(other, {"outcome": "conflict"})
        # A near miss of a key is another operation.
        for near in ("Trip-007:1:0", "trip-007:1:0 "):
            self.assertEqual(self.handle(receiver, near)["outcome"], "applied", near)
        # Purged by age: records applied before now - retention go.
        self.handle(receiver, "late:1:0", tick=500)
        removed = receiver.ok("purge_dedup", now=600, retention_ticks=200)
        self.assertEqual(removed, {"removed": 3})
        state = self.dump()
        self.assertEqual([e["effect_id"] for e in state["effects"]], [1, 2, 3, 4])
        self.assertEqual([d["key"] for d in state["dedup"]], ["late:1:0"])

    def test_dump_gets_integrity_from_the_sdk(self):
        self.opened("receiver")
        state = self.dump()
        self.assertEqual(
            (state["store_integrity"], state["receiver_integrity"]), ("ok", "ok")
        )
