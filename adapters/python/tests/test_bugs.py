"""Each --bug of example_store.py changes what it should, and only with the
switch on: every test runs the same requests on the clean store and on the
bugged one."""

import os
import sqlite3
import subprocess
import sys
import uuid

from tests.driver import EXAMPLE, AdapterCase, append_two, request

LOCK = '{"trip_id":"trip-007"}'


class BugCase(AdapterCase):
    def fresh(self):
        """A new run directory (a new seed's files)."""
        self.tearDown()
        self.setUp()

    def opened(self, role, *args, **hello_options):
        adapter = self.spawn(*args, **hello_options)
        adapter.ok("open", role=role)
        return adapter

    def killed_before_commit(self, args):
        """The dump after a writer inserted an event and its command and was
        killed before its commit (writer.before_commit)."""
        self.setup_example(*args)
        writer = self.opened("store", *args)
        writer.ok("begin")
        writer.ok(
            "insert_event", workflow_id="w", expected_seq=0, kind="e", payload="{}"
        )
        writer.ok(
            "insert_command",
            workflow_id="w",
            event_seq=1,
            index=0,
            kind="lock_budget",
            payload="{}",
        )
        writer.kill()
        return self.dump(*args)

    def both(self, observe, bug):
        """`observe(args)` on the clean store, then with `--bug bug`, each in
        a run directory of its own."""
        clean = observe(())
        self.fresh()
        bugged = observe(("--bug", bug))
        return clean, bugged


class StoreBugsTest(BugCase):
    def test_max_seq_accepts_a_stale_writer(self):
        def observe(args):
            self.setup_example(*args)
            store = self.opened("store", *args)
            store.ok("append", workflow_id="w", expected_seq=0, kind="a", payload="{}")
            store.ok("begin")
            return store.request(
                "insert_event", workflow_id="w", expected_seq=0, kind="b", payload="{}"
            )

        clean, bugged = self.both(observe, "max_seq")
        self.assertEqual(clean["error"]["kind"], "conflict")
        self.assertEqual(bugged["ok"], {"seq": 2})

    def test_sync_normal_ignores_the_hello(self):
        def observe(args):
            self.setup_example(*args)
            return [
                self.spawn(*args, synchronous="full").request("open", role=role)
                for role in ("store", "receiver")
            ]

        clean, bugged = self.both(observe, "sync_normal")
        self.assertEqual([a["ok"]["synchronous"] for a in clean], [2, 2])
        self.assertEqual([a["ok"]["synchronous"] for a in bugged], [1, 1])

    def test_sync_normal_hidden_runs_normal_and_reports_the_hello(self):
        def observe(args):
            self.setup_example(*args)
            store = self.spawn(*args, synchronous="full")
            return store.request("open", role="store")

        clean, bugged = self.both(observe, "sync_normal_hidden")
        self.assertEqual(clean["ok"]["synchronous"], 2)
        self.assertEqual(bugged["ok"]["synchronous"], 2)  # what it says, not runs

    def test_pragmas_once_sets_synchronous_only_when_the_file_is_new(self):
        def observe(args):
            self.setup_example(*args, synchronous="normal")
            store = self.spawn(*args, synchronous="normal")
            return store.request("open", role="store")

        clean, bugged = self.both(observe, "pragmas_once")
        self.assertEqual(clean["ok"]["synchronous"], 1)
        self.assertNotEqual(bugged["ok"]["synchronous"], 1)  # the compiled-in default

    def test_uuid_ids_are_not_derived(self):
        def observe(args):
            self.setup_example(*args)
            store = self.opened("store", *args)
            appended = append_two(store)
            return appended["command_ids"]

        clean, bugged = self.both(observe, "uuid_ids")
        self.assertEqual(clean, ["w:1:0", "w:1:1"])
        for command_id in bugged:
            self.assertEqual(str(uuid.UUID(command_id)), command_id)
        self.fresh()
        self.assertNotEqual(observe(("--bug", "uuid_ids")), bugged)  # not deterministic

    def test_two_transactions_leaves_an_event_without_its_commands(self):
        def observe(args):
            state = self.killed_before_commit(args)
            return state["events"], state["outbox"]

        clean, bugged = self.both(observe, "two_transactions")
        self.assertEqual(clean, ([], []))
        events, outbox = bugged
        self.assertEqual([(e["workflow_id"], e["seq"]) for e in events], [("w", 1)])
        self.assertEqual(outbox, [])

    def test_autocommit_stores_an_append_that_never_committed(self):
        def observe(args):
            state = self.killed_before_commit(args)
            return len(state["events"]), len(state["outbox"])

        clean, bugged = self.both(observe, "autocommit")
        self.assertEqual(clean, (0, 0))
        self.assertEqual(bugged, (1, 1))

    def test_load_by_created_at_follows_the_stamps_not_seq(self):
        def observe(args):
            self.setup_example(*args)
            store = self.opened("store", *args)
            for seq in (0, 1):
                store.ok(
                    "append", workflow_id="w", expected_seq=seq, kind="e", payload="{}"
                )
            store.close()
            # Stamps that run backwards, as from a clock stepped back.
            path = os.path.join(self.dir, "store.db")
            with sqlite3.connect(path) as conn:
                conn.execute(
                    "UPDATE events SET created_at = '2026-01-01 00:00:0' || (9 - seq)"
                )
            store = self.opened("store", *args)
            return [
                event["seq"] for event in store.ok("load", workflow_id="w")["events"]
            ]

        clean, bugged = self.both(observe, "load_by_created_at")
        self.assertEqual(clean, [1, 2])
        self.assertEqual(bugged, [2, 1])


class ReceiverBugsTest(BugCase):
    def effects_and_dedup(self, args):
        state = self.dump(*args)
        return [e["key"] for e in state["effects"]], [d["key"] for d in state["dedup"]]

    def test_dict_dedup_forgets_across_processes(self):
        def observe(args):
            self.setup_example(*args)
            lock = request("trip-007:1:0", "lock_budget", LOCK)
            first = self.opened("receiver", *args)
            outcomes = [first.ok("handle", request=lock)["outcome"]]
            # In one process the dict remembers.
            outcomes.append(first.ok("handle", request=lock)["outcome"])
            first.kill()
            second = self.opened("receiver", *args)
            outcomes.append(second.ok("handle", request=lock)["outcome"])
            second.kill()
            return outcomes, self.effects_and_dedup(args)

        clean, bugged = self.both(observe, "dict_dedup")
        self.assertEqual(
            clean,
            (
                ["applied", "duplicate", "duplicate"],
                (["trip-007:1:0"], ["trip-007:1:0"]),
            ),
        )
        self.assertEqual(
            bugged,
            (["applied", "duplicate", "applied"], (["trip-007:1:0"] * 2, [])),
        )

    def test_dedup_apart_keeps_an_effect_it_does_not_remember(self):
        def observe(args):
            self.setup_example(*args)
            lock = request("trip-007:1:0", "lock_budget", LOCK)
            first = self.opened("receiver", *args)
            first.ok("begin")
            first.ok("lookup", request=lock)
            first.ok("apply", request=lock)
            first.kill()  # receiver.before_effect_commit
            second = self.opened("receiver", *args)
            outcome = second.ok("handle", request=lock)["outcome"]
            second.kill()
            return outcome, self.effects_and_dedup(args)

        clean, bugged = self.both(observe, "dedup_apart")
        self.assertEqual(clean, ("applied", (["trip-007:1:0"], ["trip-007:1:0"])))
        self.assertEqual(bugged, ("applied", (["trip-007:1:0"] * 2, ["trip-007:1:0"])))

    def test_body_key_applies_every_retry(self):
        def observe(args):
            self.setup_example(*args)
            receiver = self.opened("receiver", *args)
            lock = request("trip-007:1:0", "lock_budget", LOCK)
            retry = {**lock, "attempt": 2, "sent_tick": 50}
            other = {**lock, "payload": '{"trip_id":"trip-008"}'}
            return [
                receiver.ok("handle", request=r)["outcome"]
                for r in (lock, retry, other)
            ]

        clean, bugged = self.both(observe, "body_key")
        self.assertEqual(clean, ["applied", "duplicate", "conflict"])
        self.assertEqual(bugged, ["applied", "applied", "applied"])

    def near_misses(self, args, first, *others):
        """Handles `first`, then each of `others`: its request under another
        key, with or without its own payload (a near miss, another trip)."""
        self.setup_example(*args)
        receiver = self.opened("receiver", *args)
        lock = request(first, "lock_budget", LOCK)
        requests = [lock]
        for key, payload in others:
            requests.append({**lock, "key": key, "payload": payload or LOCK})
        outcomes = [receiver.ok("handle", request=r)["outcome"] for r in requests]
        receiver.kill()
        return outcomes, self.effects_and_dedup(args)

    def test_key_lower_folds_the_case_of_keys(self):
        keys = ["Trip-007:1:0", "TRIP-007:1:0", "trip-007:1:0"]

        def observe(args):
            # A near miss in another case, then another trip's command.
            return self.near_misses(
                args, keys[0], (keys[1], None), (keys[2], '{"trip_id":"trip-008"}')
            )

        clean, bugged = self.both(observe, "key_lower")
        self.assertEqual(clean, (["applied"] * 3, (keys, sorted(keys))))
        # One record, under the folded key, answers all three.
        self.assertEqual(
            bugged, (["applied", "duplicate", "conflict"], (keys[:1], keys[2:]))
        )

    def test_key_strip_trims_the_whitespace_around_keys(self):
        keys = ["trip-007:1:0 ", "trip-007:1:0", "trip-007:1:0\u00a0", " trip-007:1:0"]

        def observe(args):
            # Near misses without the space and with a no-break space, then
            # another trip's command under a key with a leading space.
            return self.near_misses(
                args,
                keys[0],
                (keys[1], None),
                (keys[2], None),
                (keys[3], '{"trip_id":" trip-007"}'),
            )

        clean, bugged = self.both(observe, "key_strip")
        self.assertEqual(clean, (["applied"] * 4, (keys, sorted(keys))))
        # One record, under the stripped key, answers all four.
        self.assertEqual(
            bugged,
            (["applied", "duplicate", "duplicate", "conflict"], (keys[:1], keys[1:2])),
        )


class SwitchTest(BugCase):
    def test_the_environment_variable_and_the_flag(self):
        by_env = self.spawn(env={"EXAMPLE_STORE_BUG": "max_seq"})
        self.assertEqual(by_env.hello["name"], "example_store+max_seq")
        flag_wins = self.spawn(
            "--bug", "uuid_ids", env={"EXAMPLE_STORE_BUG": "max_seq"}
        )
        self.assertEqual(flag_wins.hello["name"], "example_store+uuid_ids")

    def test_an_unknown_bug_stops_before_hello(self):
        finished = subprocess.run(
            [sys.executable, EXAMPLE, "--bug", "nope"],
            input=b"",
            capture_output=True,
            timeout=10,
        )
        self.assertNotEqual(finished.returncode, 0)
        self.assertEqual(finished.stdout, b"")
        self.assertIn(b"unknown bug nope", finished.stderr)
