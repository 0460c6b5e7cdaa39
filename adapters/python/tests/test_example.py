"""example_store.py, clean, driven over pipes as crashsim drives it."""

import sqlite3
import time
import unittest

import crashsim_adapter as ca
from tests.driver import AdapterCase, append_two, command, request

TRIP = '{"city":"Oslo"}'
LOCK = '{"trip_id":"trip-007"}'


class ExampleCase(AdapterCase):
    def writer(self, *args, **hello_options):
        """A fresh store connection (setup done once per test)."""
        if not getattr(self, "set_up", False):
            self.setup_example(*args, **hello_options)
            self.set_up = True
        adapter = self.spawn(*args, **hello_options)
        adapter.ok("open", role="store")
        return adapter

    def receiver(self, *args, **hello_options):
        if not getattr(self, "set_up", False):
            self.setup_example(*args, **hello_options)
            self.set_up = True
        adapter = self.spawn(*args, **hello_options)
        adapter.ok("open", role="receiver")
        return adapter

    def append_steps(
        self, store, workflow_id, expected_seq, kind, payload, commands=()
    ):
        store.ok("begin")
        seq = store.ok(
            "insert_event",
            workflow_id=workflow_id,
            expected_seq=expected_seq,
            kind=kind,
            payload=payload,
        )["seq"]
        ids = [
            store.ok(
                "insert_command",
                workflow_id=workflow_id,
                event_seq=seq,
                index=index,
                **cmd,
            )["command_id"]
            for index, cmd in enumerate(commands)
        ]
        store.ok("commit")
        return seq, ids


class HandshakeTest(ExampleCase):
    def test_step_by_default_call_on_request(self):
        step = self.spawn()
        hello = dict(step.hello)
        self.assertIn("adapters/python/example_store.py", hello.pop("sources"))
        self.assertEqual(
            hello,
            {
                "protocol": 1,
                "name": "example_store",
                "version": "1.0",
                "roles": {"store": "step", "receiver": "step"},
                "capabilities": ["leases", "retries", "backup", "fork"],
                "sqlite_version": sqlite3.sqlite_version,
                "sdk": {"name": "crashsim_adapter", "version": ca.__version__},
            },
        )
        call = self.spawn("--granularity", "call")
        self.assertEqual(call.hello["roles"], {"store": "call", "receiver": "call"})
        bugged = self.spawn("--bug=max_seq,sync_normal")
        self.assertEqual(bugged.hello["name"], "example_store+max_seq+sync_normal")

    def test_synchronous_read_back_at_open(self):
        for name, level in [("off", 0), ("normal", 1), ("full", 2), ("extra", 3)]:
            for role in ("store", "receiver"):
                adapter = self.spawn(synchronous=name)
                if not getattr(self, "set_up", False):
                    adapter.ok("setup")
                    self.set_up = True
                self.assertEqual(adapter.ok("open", role=role), {"synchronous": level})
                adapter.close()

    def test_delete_journal_mode(self):
        store = self.writer(journal_mode="delete")
        self.append_steps(store, "w", 0, "e", "{}")
        conn = sqlite3.connect(f"{self.dir}/store.db")
        self.assertEqual(conn.execute("PRAGMA journal_mode").fetchone()[0], "delete")
        conn.close()


class StoreTest(ExampleCase):
    def test_append_then_read_everything_back(self):
        store = self.writer()
        seq, ids = self.append_steps(
            store,
            "trip-007",
            0,
            "trip_requested",
            TRIP,
            [command("lock_budget", LOCK), command("book_flight", TRIP)],
        )
        self.assertEqual((seq, ids), (1, ["trip-007:1:0", "trip-007:1:1"]))
        self.assertEqual(
            store.ok("load", workflow_id="trip-007"),
            {
                "events": [
                    {
                        "workflow_id": "trip-007",
                        "seq": 1,
                        "kind": "trip_requested",
                        "payload": TRIP,
                    }
                ]
            },
        )
        self.assertEqual(store.ok("load", workflow_id="nobody"), {"events": []})
        rows = store.ok("commands", workflow_id="trip-007", event_seq=1)["rows"]
        self.assertEqual(
            rows[0],
            {
                "command_id": "trip-007:1:0",
                "workflow_id": "trip-007",
                "event_seq": 1,
                "kind": "lock_budget",
                "payload": LOCK,
                "done": False,
                "result": None,
            },
        )
        self.assertEqual([row["command_id"] for row in rows], ids)
        pending = store.ok("pending", limit=1)["rows"]
        self.assertEqual([row["command_id"] for row in pending], ["trip-007:1:0"])

        done = store.ok(
            "mark_done", command_id="trip-007:1:0", result='{"token":"tok-1"}'
        )
        self.assertEqual(done, {"changed": True})
        again = store.ok(
            "mark_done", command_id="trip-007:1:0", result='{"token":"tok-2"}'
        )
        self.assertEqual(again, {"changed": False})
        # Marked done without a result, the result is filled in later, once.
        self.assertEqual(
            store.ok("mark_done", command_id="trip-007:1:1", result=None),
            {"changed": True},
        )
        self.assertEqual(
            store.ok("mark_done", command_id="trip-007:1:1", result=None),
            {"changed": False},
        )
        self.assertEqual(
            store.ok("mark_done", command_id="trip-007:1:1", result='{"ref":"FL2"}'),
            {"changed": True},
        )
        self.assertEqual(
            store.ok("mark_done", command_id="nobody:1:0", result="x"),
            {"changed": False},
        )
        rows = store.ok("commands", workflow_id="trip-007", event_seq=1)["rows"]
        self.assertEqual(
            [(row["done"], row["result"]) for row in rows],
            [(True, '{"token":"tok-1"}'), (True, '{"ref":"FL2"}')],
        )
        self.assertEqual(store.ok("pending", limit=10), {"rows": []})
        self.assertEqual(
            store.ok("heads"),
            {
                "heads": [
                    {
                        "workflow_id": "trip-007",
                        "last_seq": 1,
                        "kind": "trip_requested",
                        "commands_done": 2,
                    }
                ]
            },
        )

    def test_heads_by_workflow_pending_by_commit(self):
        store = self.writer()
        self.append_steps(store, "b", 0, "e1", "{}", [command("c", "{}")])
        self.append_steps(store, "a", 0, "e1", "{}", [command("c", "{}")])
        self.append_steps(store, "b", 1, "e2", "{}", [command("c", "{}")])
        heads = store.ok("heads")["heads"]
        self.assertEqual(
            [(h["workflow_id"], h["last_seq"], h["kind"]) for h in heads],
            [("a", 1, "e1"), ("b", 2, "e2")],
        )
        pending = store.ok("pending", limit=10)["rows"]
        self.assertEqual(
            [r["command_id"] for r in pending], ["b:1:0", "a:1:0", "b:2:0"]
        )

    def test_a_stale_append_is_a_conflict(self):
        store = self.writer()
        self.append_steps(store, "w", 0, "e", "{}")
        store.ok("begin")
        stale = store.error(
            "insert_event", workflow_id="w", expected_seq=0, kind="e", payload="{}"
        )
        self.assertEqual(stale["kind"], "conflict")
        gap = store.error(
            "insert_event", workflow_id="w", expected_seq=5, kind="e", payload="{}"
        )
        self.assertEqual(gap["kind"], "conflict")
        self.assertEqual(store.ok("rollback"), {})
        self.assertEqual(store.ok("rollback"), {})  # nothing to do
        whole = store.error(
            "append",
            workflow_id="w",
            expected_seq=0,
            kind="e",
            payload="{}",
            commands=[],
        )
        self.assertEqual(whole["kind"], "conflict")
        # The composed append rolled back: a new transaction can begin.
        self.assertEqual(
            store.ok(
                "append",
                workflow_id="w",
                expected_seq=1,
                kind="e2",
                payload="{}",
                commands=[command("c", "{}")],
            ),
            {"seq": 2, "command_ids": ["w:2:0"]},
        )

    def test_two_writers_from_the_same_head(self):
        first, second = self.writer(), self.writer()
        first.ok("begin")
        self.assertEqual(second.error("begin")["kind"], "busy")
        first.ok(
            "insert_event", workflow_id="w", expected_seq=0, kind="a", payload="{}"
        )
        first.ok("commit")
        second.ok("begin")
        stale = second.error(
            "insert_event", workflow_id="w", expected_seq=0, kind="b", payload="{}"
        )
        self.assertEqual(stale["kind"], "conflict")
        second.ok("rollback")

    def test_busy_is_answered_at_once(self):
        store = self.writer()
        holder = sqlite3.connect(
            f"{self.dir}/store.db", isolation_level=None, timeout=0
        )
        holder.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        self.assertEqual(store.error("begin")["kind"], "busy")
        self.assertEqual(
            store.error(
                "append",
                workflow_id="w",
                expected_seq=0,
                kind="e",
                payload="{}",
                commands=[],
            )["kind"],
            "busy",
        )
        self.assertLess(time.monotonic() - started, 0.5)
        # WAL: readers are not blocked by the writer.
        self.assertEqual(store.ok("heads"), {"heads": []})
        holder.execute("ROLLBACK")
        holder.close()
        self.assertEqual(store.ok("begin"), {})
        self.assertEqual(store.ok("rollback"), {})

    def test_call_granularity_serves_whole_operations(self):
        store = self.writer("--granularity", "call")
        self.assertEqual(store.error("begin")["kind"], "unsupported")
        appended = append_two(store)
        self.assertEqual(appended, {"seq": 1, "command_ids": ["w:1:0", "w:1:1"]})
        stale = store.error(
            "append",
            workflow_id="w",
            expected_seq=0,
            kind="e",
            payload="{}",
            commands=[],
        )
        self.assertEqual(stale["kind"], "conflict")


class ReceiverTest(ExampleCase):
    def test_new_seen_conflict_and_results(self):
        receiver = self.receiver()
        lock = request("trip-007:1:0", "lock_budget", LOCK)
        receiver.ok("begin")
        self.assertEqual(receiver.ok("lookup", request=lock), {"found": "new"})
        self.assertEqual(
            receiver.ok("apply", request=lock),
            {"effect_id": 1, "result": '{"token":"tok-1"}'},
        )
        receiver.ok("commit")
        retry = {**lock, "attempt": 2, "sent_tick": 99}
        receiver.ok("begin")
        self.assertEqual(
            receiver.ok("lookup", request=retry),
            {"found": "seen", "result": '{"token":"tok-1"}'},
        )
        other = {**lock, "payload": '{"trip_id":"trip-008"}'}
        self.assertEqual(receiver.ok("lookup", request=other), {"found": "conflict"})
        receiver.ok("rollback")
        # Hotels: the sold-out rule at 1/4 (trip-002 is sold out).
        hotel = request(
            "trip-002:3:0", "book_hotel", '{"city":"Oslo","trip_id":"trip-002"}'
        )
        self.assertEqual(
            receiver.ok("handle", request=hotel),
            {"outcome": "applied", "result": '{"reason":"sold_out"}', "effect_id": 2},
        )
        hotel = request(
            "trip-001:3:0", "book_hotel", '{"city":"Oslo","trip_id":"trip-001"}'
        )
        self.assertEqual(
            receiver.ok("handle", request=hotel),
            {"outcome": "applied", "result": '{"ref":"HT3"}', "effect_id": 3},
        )
        self.assertEqual(
            receiver.ok("handle", request=retry),
            {"outcome": "duplicate", "result": '{"token":"tok-1"}'},
        )
        self.assertEqual(receiver.ok("handle", request=other), {"outcome": "conflict"})
        bad = request("x:1:0", "launch_rocket", "{}")
        self.assertEqual(receiver.error("handle", request=bad)["kind"], "invalid")
        # The failed handle rolled back: the next request is served.
        self.assertEqual(receiver.ok("begin"), {})
        self.assertEqual(receiver.ok("rollback"), {})

    def test_a_restarted_receiver_remembers(self):
        first = self.receiver()
        lock = request("k:1:0", "lock_budget", LOCK)
        self.assertEqual(first.ok("handle", request=lock)["outcome"], "applied")
        first.kill()
        second = self.receiver()
        self.assertEqual(second.ok("handle", request=lock)["outcome"], "duplicate")

    def test_busy_receiver(self):
        receiver = self.receiver()
        holder = sqlite3.connect(
            f"{self.dir}/receiver.db", isolation_level=None, timeout=0
        )
        holder.execute("BEGIN IMMEDIATE")
        self.assertEqual(receiver.error("begin")["kind"], "busy")
        lock = request("k:1:0", "lock_budget", LOCK)
        self.assertEqual(receiver.error("handle", request=lock)["kind"], "busy")
        holder.execute("ROLLBACK")
        holder.close()
        self.assertEqual(receiver.ok("handle", request=lock)["outcome"], "applied")


class DumpTest(ExampleCase):
    def test_dump_shape_and_order(self):
        store = self.writer()
        self.append_steps(store, "trip-b", 0, "e", "{}", [command("lock_budget", "{}")])
        self.append_steps(store, "trip-a", 0, "e", "{}", [command("lock_budget", "{}")])
        self.append_steps(store, "trip-b", 1, "e2", "{}")
        store.ok("mark_done", command_id="trip-a:1:0", result='{"token":"tok-1"}')
        receiver = self.receiver()
        for key in ("trip-b:1:0", "trip-a:1:0"):
            receiver.ok("handle", request=request(key, "lock_budget", "{}"))
        store.kill()
        receiver.kill()

        state = self.dump()
        self.assertEqual(
            list(state),
            [
                "events",
                "outbox",
                "effects",
                "dedup",
                "store_integrity",
                "receiver_integrity",
            ],
        )
        self.assertEqual(
            [(e["workflow_id"], e["seq"]) for e in state["events"]],
            [("trip-a", 1), ("trip-b", 1), ("trip-b", 2)],
        )
        self.assertEqual(
            state["outbox"],
            [
                {
                    "command_id": "trip-b:1:0",
                    "workflow_id": "trip-b",
                    "event_seq": 1,
                    "kind": "lock_budget",
                    "payload": "{}",
                    "done": False,
                    "result": None,
                },
                {
                    "command_id": "trip-a:1:0",
                    "workflow_id": "trip-a",
                    "event_seq": 1,
                    "kind": "lock_budget",
                    "payload": "{}",
                    "done": True,
                    "result": '{"token":"tok-1"}',
                },
            ],
        )
        self.assertEqual(
            state["effects"],
            [
                {
                    "effect_id": 1,
                    "key": "trip-b:1:0",
                    "kind": "lock_budget",
                    "payload": "{}",
                    "result": '{"token":"tok-1"}',
                },
                {
                    "effect_id": 2,
                    "key": "trip-a:1:0",
                    "kind": "lock_budget",
                    "payload": "{}",
                    "result": '{"token":"tok-2"}',
                },
            ],
        )
        digest = "be8d595cecdb05bf"  # sha256 of lock_budget, newline, {}
        self.assertEqual(
            state["dedup"],
            [
                {
                    "key": "trip-a:1:0",
                    "digest": digest,
                    "result": '{"token":"tok-2"}',
                    "effect_id": 2,
                },
                {
                    "key": "trip-b:1:0",
                    "digest": digest,
                    "result": '{"token":"tok-1"}',
                    "effect_id": 1,
                },
            ],
        )
        self.assertEqual(state["store_integrity"], "ok")
        self.assertEqual(state["receiver_integrity"], "ok")


class DeterminismTest(ExampleCase):
    def script(self):
        """One small run; every answer, in order."""
        answers = []
        store = self.writer()
        for workflow in ("w2", "w1"):
            store.ok("begin")
            answers.append(
                store.request(
                    "insert_event",
                    workflow_id=workflow,
                    expected_seq=0,
                    kind="e",
                    payload="{}",
                )
            )
            answers.append(
                store.request(
                    "insert_command",
                    workflow_id=workflow,
                    event_seq=1,
                    index=0,
                    kind="lock_budget",
                    payload="{}",
                )
            )
            store.ok("commit")
        answers.append(store.request("pending", limit=10))
        answers.append(store.request("heads"))
        receiver = self.receiver()
        for row in answers[-2]["ok"]["rows"]:
            answers.append(
                receiver.request(
                    "handle",
                    request=request(row["command_id"], row["kind"], row["payload"]),
                )
            )
        answers.append(self.dump())
        return answers

    def test_the_same_requests_get_the_same_answers(self):
        first = self.script()
        self.tearDown()
        self.setUp()
        self.set_up = False
        self.assertEqual(self.script(), first)


if __name__ == "__main__":
    unittest.main()
