"""What the protocol costs over a pipe: per-request round trips and start-up.

    python3 adapters/python/bench_pipe.py [--python EXE] [--requests N] [--starts N]
                                          [--sut "CMD"]

Spawns the adapter (the example store by default) as crashsim does, answers
its handshake, sets up a small database (20 workflows of 3 events, 2 commands
each), and times N round trips of each of `ping`, `heads`, `load` and a step
`append` (begin, insert_event, 2 insert_command, commit) from writing the
request line to reading its answer; then times how long fresh processes take
to answer `hello`. The client pre-encodes its lines and does not parse the
answers it times, so the numbers are the adapter's and the pipe's.
Wall-clock timing: for comparisons on one machine, not for tests.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def hello(directory, purpose):
    def database(name):
        return {
            "path": os.path.join(directory, name),
            "journal_mode": "wal",
            "synchronous": "full",
            "busy_timeout_ms": 0,
        }

    return {
        "protocol": 1,
        "purpose": purpose,
        "store": database("store.db"),
        "receiver": database("receiver.db"),
        "hotel_failure": {"numerator": 1, "denominator": 4},
    }


class Client:
    def __init__(self, command):
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        self.next_id = 0

    def line(self, op, **fields):
        ident, self.next_id = self.next_id, self.next_id + 1
        return (
            json.dumps({"id": ident, "op": op, "tick": ident, **fields}).encode()
            + b"\n"
        )

    def call(self, op, **fields):
        self.process.stdin.write(self.line(op, **fields))
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        if "ok" not in answer:
            raise SystemExit(f"{op} answered {answer}")
        return answer["ok"]

    def timed(self, lines):
        """Round trips of pre-encoded lines, in microseconds."""
        write, flush = self.process.stdin.write, self.process.stdin.flush
        readline, clock = self.process.stdout.readline, time.perf_counter_ns
        times = []
        for line in lines:
            started = clock()
            write(line)
            flush()
            answer = readline()
            times.append((clock() - started) / 1000)
            if b'"error"' in answer[:40]:
                raise SystemExit(f"{line!r} answered {answer!r}")
        return times

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def percentiles(name, times):
    times = sorted(times)
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))]  # noqa: E731
    print(
        f"{name:>8}: n={len(times):>6}  p50 {pick(0.5):8.1f} µs  "
        f"p90 {pick(0.9):8.1f} µs  p99 {pick(0.99):8.1f} µs"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--sut", help="adapter command (default: the example store)")
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--starts", type=int, default=50)
    args = parser.parse_args()
    command = (
        shlex.split(args.sut)
        if args.sut
        else [args.python, os.path.join(HERE, "example_store.py")]
    )
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="crashsim-bench-", dir=shm) as directory:
        setup = Client(command)
        setup.call("hello", **hello(directory, "setup"))
        setup.call("setup")
        setup.call("open", role="store")
        for trip in range(20):
            for seq in range(3):
                commands = [{"kind": "lock_budget", "payload": "{}"}] * 2
                setup.call(
                    "append",
                    workflow_id=f"trip-{trip:03}",
                    expected_seq=seq,
                    kind="e",
                    payload="{}",
                    commands=commands,
                )
        setup.close()

        client = Client(command)
        print(f"adapter: {' '.join(command)}")
        print(f"{client.call('hello', **hello(directory, 'bench'))}")
        client.call("open", role="store")
        n = args.requests
        percentiles("ping", client.timed([client.line("ping") for _ in range(n)]))
        percentiles("heads", client.timed([client.line("heads") for _ in range(n)]))
        lines = [client.line("load", workflow_id=f"trip-{i % 20:03}") for i in range(n)]
        percentiles("load", client.timed(lines))
        appends = n // 10
        steps = []
        for index in range(appends):
            workflow = f"bench-{index}"
            steps.append(client.line("begin"))
            steps.append(
                client.line(
                    "insert_event",
                    workflow_id=workflow,
                    expected_seq=0,
                    kind="e",
                    payload="{}",
                )
            )
            for command_index in range(2):
                steps.append(
                    client.line(
                        "insert_command",
                        workflow_id=workflow,
                        event_seq=1,
                        index=command_index,
                        kind="lock_budget",
                        payload="{}",
                    )
                )
            steps.append(client.line("commit"))
        times = client.timed(steps)
        per_append = [sum(times[i : i + 5]) for i in range(0, len(times), 5)]
        percentiles("step", times)
        percentiles("append", per_append)
        client.close()

        hello_line = (
            json.dumps(
                {"id": 0, "op": "hello", "tick": 0, **hello(directory, "probe")}
            ).encode()
            + b"\n"
        )
        starts = []
        for _ in range(args.starts):
            started = time.perf_counter_ns()
            process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
            process.stdin.write(hello_line)
            process.stdin.flush()
            process.stdout.readline()
            starts.append((time.perf_counter_ns() - started) / 1_000_000)
            process.kill()
            process.wait()
        starts.sort()
        print(
            f"   start: n={len(starts):>6}  p50 {starts[len(starts) // 2]:8.1f} ms  "
            f"min {starts[0]:8.1f} ms  max {starts[-1]:8.1f} ms  (spawn to hello)"
        )


if __name__ == "__main__":
    main()
