"""The fork server (crashsim_adapter/forkserver.py), driven as crashsim
drives it: a SOCK_SEQPACKET channel as stdin, a child per `fork` request
that serves the protocol on the pipes handed over, `reap` after a kill,
and nothing left once the channel closes."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest

from tests.driver import EXAMPLE, AdapterCase, hello_fields

TIMEOUT_S = 10


class ForkServer:
    def __init__(self, directory, stderr_path):
        self.channel, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.channel.settimeout(TIMEOUT_S)
        environment = dict(os.environ, CRASHSIM_FORK_SERVER="1")
        with open(stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, EXAMPLE],
                stdin=theirs,
                stdout=stderr,
                stderr=stderr,
                env=environment,
                start_new_session=True,
            )
        theirs.close()

    def ask(self, message, fds=()):
        socket.send_fds(self.channel, [json.dumps(message).encode()], list(fds))
        return json.loads(self.channel.recv(65536))

    def fork(self, label, stderr_path):
        child_in, requests = os.pipe()
        answers, child_out = os.pipe()
        stderr = os.open(stderr_path, os.O_WRONLY | os.O_CREAT, 0o644)
        answer = self.ask({"op": "fork", "label": label}, [child_in, child_out, stderr])
        for fd in (child_in, child_out, stderr):
            os.close(fd)
        return answer, Child(requests, answers, answer.get("pid"))

    def kill(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.channel.close()


class Child:
    def __init__(self, requests, answers, pid):
        self.requests = os.fdopen(requests, "wb")
        self.answers = os.fdopen(answers, "rb")
        self.pid = pid
        self.next_id = 0

    def ok(self, op, **fields):
        self.requests.write(
            json.dumps({"id": self.next_id, "op": op, "tick": 0, **fields}).encode()
            + b"\n"
        )
        self.requests.flush()
        self.next_id += 1
        answer = json.loads(self.answers.readline())
        assert "ok" in answer, answer
        return answer["ok"]

    def close(self):
        self.requests.close()
        self.answers.close()


def alive(pid):
    """Whether `pid` runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@unittest.skipUnless(sys.platform.startswith("linux"), "reads /proc")
class ForkServerTest(AdapterCase):
    def setUp(self):
        super().setUp()
        self.server = ForkServer(self.dir, os.path.join(self.dir, "server.txt"))
        self.children = []

    def tearDown(self):
        for child in self.children:
            child.close()
        self.server.kill()
        super().tearDown()

    def fork(self, label):
        answer, child = self.server.fork(label, os.path.join(self.dir, label))
        self.children.append(child)
        return answer, child

    def test_a_child_serves_the_protocol_in_its_own_process_group(self):
        answer, child = self.fork("writer-0.0")
        self.assertGreater(answer["pid"], 0)
        self.assertEqual(os.getpgid(child.pid), child.pid)
        self.assertNotEqual(child.pid, self.server.process.pid)
        hello = child.ok("hello", **hello_fields(self.dir, purpose="setup"))
        self.assertIn("fork", hello["capabilities"])
        self.assertEqual(child.ok("setup"), {})
        _, store = self.fork("writer-1.0")
        store.ok("hello", **hello_fields(self.dir))
        self.assertEqual(store.ok("open", role="store"), {"synchronous": 2})

    def test_a_killed_child_is_reaped_on_request_with_its_signal(self):
        _, child = self.fork("worker-0.0")
        child.ok("hello", **hello_fields(self.dir))
        os.killpg(child.pid, signal.SIGKILL)
        self.assertEqual(
            self.server.ask({"op": "reap", "pid": child.pid}), {"signal": 9}
        )
        self.assertFalse(alive(child.pid))

    def test_a_child_that_exits_on_its_own_is_reaped_with_its_code(self):
        _, child = self.fork("worker-0.0")
        child.requests.close()  # end of file: the child's loop ends, it exits 0
        self.assertEqual(self.server.ask({"op": "reap", "pid": child.pid}), {"exit": 0})

    def test_a_fork_without_its_three_descriptors_is_an_error_answer(self):
        answer = self.server.ask({"op": "fork", "label": "x"})
        self.assertIn("3 descriptors", answer["error"])

    def test_the_server_kills_its_children_and_exits_when_the_channel_closes(self):
        _, child = self.fork("receiver-0.0")
        child.ok("hello", **hello_fields(self.dir))
        self.server.channel.close()
        self.assertEqual(self.server.process.wait(timeout=TIMEOUT_S), 0)
        deadline = time.monotonic() + TIMEOUT_S
        while alive(child.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertFalse(alive(child.pid))


class PreparedBeforeForkingTest(unittest.TestCase):
    def test_the_sources_are_found_once_in_the_server_not_in_each_child(self):
        # Finding them walks every loaded module's path (some 700 lookups):
        # done before the first fork, each child's hello only reads them.
        from crashsim_adapter import forkserver, protocol, sources
        from tests.toy_adapter import StepStore

        found_when_forking = []

        def run():
            found_when_forking.append(sources._SOURCES is not None)
            raise SystemExit(0)

        saved = (forkserver.requested, forkserver.run, sources._SOURCES)
        forkserver.requested, forkserver.run = (lambda: True), run
        sources._SOURCES = None
        try:
            with self.assertRaises(SystemExit):
                protocol.serve(store=StepStore)
        finally:
            forkserver.requested, forkserver.run, sources._SOURCES = saved
        self.assertEqual(found_when_forking, [True])
