"""The SDK's loop over pipes, with toy adapters (tests/toy_adapter.py):
handshake, granularity, error kinds, the private channel, composition."""

import json
import os
import sqlite3
import subprocess
import sys

import crashsim_adapter as ca
from tests.driver import TOY, AdapterCase, append_two, command, request


class HandshakeTest(AdapterCase):
    def test_step_classes_are_served_as_step(self):
        toy = self.spawn("step", script=TOY)
        hello = dict(toy.hello)
        # The files of the modules it loaded from the working directory
        # (the repository root here): the adapter script and the SDK.
        sources = hello.pop("sources")
        self.assertIn("adapters/python/tests/toy_adapter.py", sources)
        self.assertIn("adapters/python/crashsim_adapter/protocol.py", sources)
        self.assertEqual(sources, sorted(sources))
        self.assertFalse(
            [s for s in sources if s.startswith("..") or not s.endswith(".py")]
        )
        self.assertEqual(
            hello,
            {
                "protocol": 1,
                "name": "toy",
                "version": "3",
                "roles": {"store": "step", "receiver": "step"},
                "capabilities": ["fork"],
                "sqlite_version": sqlite3.sqlite_version,
                "sdk": {"name": "crashsim_adapter", "version": ca.__version__},
            },
        )

    def test_whole_operation_classes_are_served_as_call(self):
        toy = self.spawn("call", script=TOY)
        self.assertEqual(toy.hello["roles"], {"store": "call", "receiver": "call"})
        self.assertEqual(toy.hello["name"], "toy-call")

    def test_granularity_can_be_forced_to_call(self):
        toy = self.spawn("forced", script=TOY)
        self.assertEqual(toy.hello["roles"], {"store": "call", "receiver": "call"})
        self.assertEqual(toy.hello["name"], "toy_adapter")  # the script's name

    def test_a_store_without_its_operations_is_refused_before_hello(self):
        finished = subprocess.run(
            [sys.executable, TOY, "broken"],
            input=b"",
            capture_output=True,
            timeout=10,
        )
        self.assertNotEqual(finished.returncode, 0)
        self.assertEqual(finished.stdout, b"")
        self.assertIn(b"BrokenStore (store) lacks load, heads", finished.stderr)

    def test_open_answers_the_level_the_role_reports(self):
        toy = self.spawn("step", script=TOY, synchronous="normal")
        self.assertEqual(toy.ok("open", role="store"), {"synchronous": 1})
        self.assertEqual(toy.ok("open", role="receiver"), {"synchronous": 3})

    def test_a_store_that_cannot_tell_its_level_answers_null(self):
        toy = self.spawn("library", script=TOY)
        self.assertEqual(toy.ok("open", role="store"), {"synchronous": None})
        self.assertEqual(toy.ok("open", role="receiver"), {"synchronous": None})


class IntegrityTest(AdapterCase):
    def test_a_dump_of_rows_only_gets_the_files_integrity(self):
        setup = self.spawn("library", script=TOY, purpose="setup")
        setup.ok("setup")
        dump = self.spawn("library", script=TOY, purpose="dump").ok("dump")
        self.assertEqual(dump["store_integrity"], "ok")
        self.assertEqual(dump["receiver_integrity"], "ok")

    def test_a_damaged_file_is_named(self):
        setup = self.spawn("library", script=TOY, purpose="setup")
        setup.ok("setup")
        with open(f"{self.dir}/store.db", "wb") as file:
            file.write(b"not a database, not empty" * 100)
        dumper = self.spawn("library", script=TOY, purpose="dump")
        failed = dumper.error("dump")
        self.assertEqual(failed["kind"], "failed")
        self.assertIn("not a database", failed["message"])

    def test_a_missing_file_is_not_created(self):
        dumper = self.spawn("library", script=TOY, purpose="dump")
        self.assertEqual(dumper.error("dump")["kind"], "environment")
        self.assertFalse(os.path.exists(f"{self.dir}/store.db"))


class ErrorTest(AdapterCase):
    def test_each_error_kind_and_the_loop_goes_on(self):
        toy = self.spawn("step", script=TOY)
        toy.ok("open", role="store")
        failed = toy.error("heads")
        self.assertEqual(failed, {"kind": "failed", "message": "RuntimeError: boom"})
        self.assertEqual(toy.error("pending", limit=3)["kind"], "busy")
        busy = toy.error("commands", workflow_id="w", event_seq=1)
        self.assertEqual(busy, {"kind": "busy", "message": "database is locked"})
        self.assertEqual(toy.error("load")["kind"], "invalid")  # no workflow_id
        self.assertEqual(toy.error("frobnicate")["kind"], "unsupported")
        self.assertEqual(toy.ok("ping"), {})
        self.assertIn("Traceback", toy.stderr())
        self.assertIn("RuntimeError: boom", toy.stderr())
        self.assertEqual(toy.close(), 0)  # stdin closed: serve returns

    def test_an_answer_json_cannot_carry_is_failed(self):
        toy = self.spawn("step", script=TOY)
        toy.ok("open", role="store")
        toy.ok("begin")
        fields = dict(workflow_id="w", event_seq=1, index=0, payload="{}")
        failed = toy.error("insert_command", kind="bytes", **fields)
        self.assertEqual(failed["kind"], "failed")
        self.assertIn("bytes is not JSON serializable", failed["message"])
        self.assertEqual(
            toy.ok("insert_command", kind="ok", **fields), {"command_id": "w:1:0"}
        )

    def test_role_operations_before_open_are_invalid(self):
        toy = self.spawn("step", script=TOY)
        self.assertEqual(toy.error("heads")["kind"], "invalid")
        self.assertEqual(toy.error("begin")["kind"], "invalid")

    def test_call_granularity_does_not_know_the_steps(self):
        toy = self.spawn("call", script=TOY)
        toy.ok("open", role="store")
        for op in ("begin", "insert_event", "insert_command", "commit", "rollback"):
            self.assertEqual(toy.error(op)["kind"], "unsupported", op)

    def test_a_role_not_served_is_unsupported(self):
        toy = self.spawn("store_only", script=TOY)
        self.assertEqual(toy.hello["roles"], {"store": "step"})
        self.assertEqual(toy.error("open", role="receiver")["kind"], "unsupported")
        self.assertEqual(toy.error("lookup")["kind"], "unsupported")
        self.assertEqual(toy.error("open", role="teapot")["kind"], "invalid")
        self.assertEqual(list(toy.ok("dump")), ["events", "outbox", "store_integrity"])

    def test_blank_and_malformed_lines(self):
        toy = self.spawn("step", script=TOY)
        toy.send_line("")
        toy.send_line("this is not json")
        answer = json.loads(toy.read_line())
        self.assertEqual(answer["id"], None)
        self.assertEqual(answer["error"]["kind"], "invalid")
        toy.next_id = 5
        self.assertEqual(toy.ok("ping"), {})


class ChannelTest(AdapterCase):
    def test_stray_output_goes_to_stderr(self):
        toy = self.spawn("step", script=TOY)
        toy.ok("open", role="store")
        self.assertEqual(toy.ok("load", workflow_id="w"), {"events": []})
        self.assertEqual(toy.ok("ping"), {})
        stderr = toy.stderr()
        self.assertIn("a stray print from user code", stderr)
        self.assertIn("a stray write to fd 1", stderr)

    def test_now_is_the_request_tick(self):
        toy = self.spawn("step", script=TOY)
        toy.ok("open", role="store")
        self.assertEqual(
            toy.ok("mark_done", command_id="c", result=None, tick=42), {"changed": True}
        )
        self.assertEqual(
            toy.ok("mark_done", command_id="c", result=None, tick=7), {"changed": False}
        )

    def test_non_ascii_travels_as_utf8(self):
        toy = self.spawn("step", script=TOY)
        toy.ok("open", role="store")
        toy.ok(
            "append",
            workflow_id="wø",
            expected_seq=0,
            kind="k",
            payload='{"c":"Zürich 😀"}',
        )
        line = None
        toy.send_line(
            json.dumps({"id": toy.next_id, "op": "load", "workflow_id": "wø"})
        )
        toy.next_id += 1
        line = toy.read_line()
        self.assertIn('{"c":"Zürich 😀"}'.encode().replace(b'"', b'\\"'), line)


class CompositionTest(AdapterCase):
    def test_append_is_composed_from_the_steps_for_a_step_store(self):
        toy = self.spawn("step", script=TOY)
        toy.ok("open", role="store")
        appended = append_two(toy)
        self.assertEqual(appended, {"seq": 1, "command_ids": ["w:1:0", "w:1:1"]})
        stale = toy.error(
            "append",
            workflow_id="w",
            expected_seq=0,
            kind="e",
            payload="{}",
            commands=[],
        )
        self.assertEqual(stale["kind"], "conflict")
        # An error inside the transaction rolls it back: nothing committed,
        # and the next begin finds no transaction open.
        bad = toy.error(
            "append",
            workflow_id="w",
            expected_seq=1,
            kind="e",
            payload="{}",
            commands=[command("ok", "{}"), command("bad", "{}")],
        )
        self.assertEqual(bad["kind"], "invalid")
        self.assertEqual(
            [e["seq"] for e in toy.ok("load", workflow_id="w")["events"]], [1]
        )
        self.assertEqual(toy.ok("begin"), {})
        self.assertEqual(toy.ok("rollback"), {})

    def test_handle_is_composed_for_a_step_receiver(self):
        toy = self.spawn("step", script=TOY)
        toy.ok("open", role="receiver")
        first = request("k", "book_flight", "{}")
        self.assertEqual(
            toy.ok("handle", request=first),
            {"outcome": "applied", "result": '{"ref":"FL1"}', "effect_id": 1},
        )
        self.assertEqual(
            toy.ok("handle", request={**first, "attempt": 2}),
            {"outcome": "duplicate", "result": '{"ref":"FL1"}'},
        )
        other = request("k", "book_flight", '{"x":"y"}')
        self.assertEqual(toy.ok("handle", request=other), {"outcome": "conflict"})
        self.assertEqual(toy.ok("lookup", request=other), {"found": "conflict"})
        self.assertEqual(
            toy.ok("lookup", request=first),
            {"found": "seen", "result": '{"ref":"FL1"}'},
        )

    def test_a_call_store_uses_its_own_append_and_handle(self):
        toy = self.spawn("call", script=TOY)
        toy.ok("open", role="store")
        appended = toy.ok(
            "append",
            workflow_id="w",
            expected_seq=0,
            kind="e",
            payload="{}",
            commands=[command("a", "{}")],
        )
        self.assertEqual(appended, {"seq": 1, "command_ids": ["w/0/a"]})
        toy.ok("open", role="receiver")
        self.assertEqual(
            toy.ok("handle", request=request("k", "x", "{}")),
            {"outcome": "applied", "result": "done", "effect_id": 1},
        )
        self.assertEqual(
            toy.ok("handle", request=request("k", "x", "{}")),
            {"outcome": "duplicate", "result": "done"},
        )

    def test_dump_turns_tuples_into_objects_in_protocol_order(self):
        toy = self.spawn("step", script=TOY)
        toy.ok("open", role="store")
        toy.ok(
            "append",
            workflow_id="w",
            expected_seq=0,
            kind="e",
            payload="{}",
            commands=[],
        )
        state = toy.ok("dump")
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
            state["events"],
            [{"workflow_id": "w", "seq": 1, "kind": "e", "payload": "{}"}],
        )
        self.assertEqual(
            state["effects"],
            [
                {
                    "effect_id": 1,
                    "key": "k",
                    "kind": "lock_budget",
                    "payload": "{}",
                    "result": '{"token":"tok-1"}',
                }
            ],
        )
        self.assertEqual(state["store_integrity"], "ok")
