"""A small crashsim stand-in: runs an adapter as a subprocess over pipes,
numbers its requests from 0 and reads one answer line per request."""

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import unittest

ADAPTERS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ADAPTERS, "example_store.py")
TOY = os.path.join(ADAPTERS, "tests", "toy_adapter.py")

ANSWER_TIMEOUT_S = 10


def database(directory, name, journal_mode="wal", synchronous="full"):
    return {
        "path": os.path.join(directory, name),
        "journal_mode": journal_mode,
        "synchronous": synchronous,
        "busy_timeout_ms": 0,
    }


def hello_fields(
    directory,
    purpose="actor",
    hotel_failure=(1, 4),
    leases=False,
    retries=False,
    dedup_retention=False,
    **settings,
):
    fields = {
        "protocol": 1,
        "crashsim": "0.1.0",
        "purpose": purpose,
        "actor": purpose,
        "incarnation": 0,
        "seed": 17,
        "store": database(directory, "store.db", **settings),
        "receiver": database(directory, "receiver.db", **settings),
        "hotel_failure": {
            "numerator": hotel_failure[0],
            "denominator": hotel_failure[1],
        },
    }
    if leases:
        fields["leases"] = True  # as crashsim sends it: only when true
    if retries:
        fields["retries"] = True
    if dedup_retention:
        fields["dedup_retention"] = True
    return fields


class AdapterError(AssertionError):
    pass


class Adapter:
    """One adapter process. `ok(op, ...)` and `error(op, ...)` send a request
    and return the answer's `ok` or `error` part (asserting which it is)."""

    count = 0

    def __init__(self, directory, script=EXAMPLE, args=(), env=None, python=None):
        Adapter.count += 1
        self.directory = directory
        self.stderr_path = os.path.join(directory, f"stderr-{Adapter.count}.txt")
        environment = dict(os.environ)
        environment.pop("EXAMPLE_STORE_BUG", None)
        environment.update(env or {})
        with open(self.stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                [python or sys.executable, script, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=environment,
                start_new_session=True,  # its own process group, as crashsim does
            )
        self.next_id = 0
        self.hello = None

    def handshake(self, **hello_options):
        self.hello = self.ok("hello", **hello_fields(self.directory, **hello_options))
        return self.hello

    def send_line(self, line):
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def read_line(self):
        ready, _, _ = select.select([self.process.stdout], [], [], ANSWER_TIMEOUT_S)
        if not ready:
            raise AdapterError(f"no answer within {ANSWER_TIMEOUT_S} s; {self.tail()}")
        line = self.process.stdout.readline()
        if not line:
            raise AdapterError(f"the adapter closed stdout; {self.tail()}")
        return line

    def request(self, op, tick=0, **fields):
        ident = self.next_id
        self.next_id += 1
        self.send_line(json.dumps({"id": ident, "op": op, "tick": tick, **fields}))
        line = self.read_line()
        try:
            answer = json.loads(line)
        except ValueError:
            raise AdapterError(f"not a protocol line: {line!r}") from None
        if answer.get("id") != ident or set(answer) not in (
            {"id", "ok"},
            {"id", "error"},
        ):
            raise AdapterError(f"bad answer to {op} #{ident}: {line!r}")
        return answer

    def ok(self, op, **fields):
        answer = self.request(op, **fields)
        if "ok" not in answer:
            raise AdapterError(f"{op} answered {answer}; {self.tail()}")
        return answer["ok"]

    def error(self, op, **fields):
        answer = self.request(op, **fields)
        if "error" not in answer:
            raise AdapterError(f"{op} answered {answer}, not an error")
        return answer["error"]

    def kind(self, op, **fields):
        """The error kind of the answer, or "ok"."""
        answer = self.request(op, **fields)
        return answer["error"]["kind"] if "error" in answer else "ok"

    def stderr(self):
        with open(self.stderr_path, encoding="utf-8", errors="replace") as text:
            return text.read()

    def tail(self):
        return f"stderr: {self.stderr()[-2000:]!r}"

    def kill(self):
        """SIGKILL the process group, as crashsim does at a kill point."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.close_pipes()

    def close(self):
        """Close stdin: the adapter returns from serve and exits."""
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=ANSWER_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.kill()
        self.close_pipes()
        return self.process.returncode

    def close_pipes(self):
        for pipe in (self.process.stdin, self.process.stdout):
            if not pipe.closed:
                pipe.close()


def command(kind, payload):
    return {"kind": kind, "payload": payload}


def append_two(adapter, expected_seq=0, method="ok"):
    """Sends `append` of event "e" with commands "a" and "b" to workflow
    "w" at `expected_seq`; `method` is "ok" or "error"."""
    return getattr(adapter, method)(
        "append",
        workflow_id="w",
        expected_seq=expected_seq,
        kind="e",
        payload="{}",
        commands=[command("a", "{}"), command("b", "{}")],
    )


def request(key, kind, payload, attempt=1, sent_tick=0):
    return {
        "key": key,
        "kind": kind,
        "payload": payload,
        "attempt": attempt,
        "sent_tick": sent_tick,
    }


class AdapterCase(unittest.TestCase):
    """A test with its own directory (on /dev/shm where there is one, as
    crashsim runs) and adapters that are killed when it ends."""

    def setUp(self):
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.tmp = tempfile.TemporaryDirectory(prefix="crashsim-python-", dir=shm)
        self.dir = self.tmp.name
        self.adapters = []

    def tearDown(self):
        for adapter in self.adapters:
            adapter.kill()
        self.tmp.cleanup()

    def spawn(
        self, *args, script=EXAMPLE, env=None, python=None, hello=True, **hello_options
    ):
        adapter = Adapter(self.dir, script=script, args=args, env=env, python=python)
        self.adapters.append(adapter)
        if hello:
            adapter.handshake(**hello_options)
        return adapter

    def setup_example(self, *args, **hello_options):
        """Runs the example's setup in a process of its own, as crashsim does."""
        setup = self.spawn(*args, purpose="setup", **hello_options)
        self.assertEqual(setup.ok("setup"), {})
        setup.close()

    def dump(self, *args, script=EXAMPLE, **hello_options):
        dumper = self.spawn(*args, script=script, purpose="dump", **hello_options)
        state = dumper.ok("dump")
        dumper.close()
        return state
