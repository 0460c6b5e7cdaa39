"""The fork server (docs/adapter-protocol.md, "Fork server").

A Python interpreter's start-up and imports cost more than most of what a
connection then does, and a seed opens dozens of connections. An adapter
written with this SDK declares the `fork` capability; crashsim then starts
it once per seed with `CRASHSIM_FORK_SERVER=1` and a Unix socket
(`SOCK_SEQPACKET`) as stdin, and asks it for one child per connection. The
store's code does not change: `serve()` runs this instead of its loop.

The rules this keeps (and a hand-written server must keep):

- the server opens no database, registers no VFS and starts no thread: a
  fork copies only the calling thread, and a child must not inherit a lock
  (it may map the VFS extension's library, as long as the extension's
  entry point runs in each child);
- a child sets its own process group (the server sets it too, so it exists
  before crashsim learns the pid), dies with the server, takes the three
  descriptors it was handed as stdin, stdout and stderr, and from there on
  is a process started the ordinary way;
- a child is reaped only when crashsim asks, so its pid stays reserved
  while crashsim may still signal its group;
- at end of file on the channel it kills every child's group, reaps them,
  and exits.
"""

import gc
import json
import os
import signal
import socket
import sys
import threading

from . import vfs

ENV_FORK_SERVER = "CRASHSIM_FORK_SERVER"
CAPABILITY = "fork"
_MAX_MESSAGE = 64 * 1024
_PR_SET_PDEATHSIG = 1


def requested():
    """Whether crashsim started this process as a fork server."""
    return os.environ.get(ENV_FORK_SERVER) == "1"


def _prctl():
    """Linux's `prctl`, looked up once in the server (None elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes  # noqa: PLC0415

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _die_with_parent(prctl, server):
    """SIGKILL this process when the server dies (Linux; best effort), and
    exit now if it died before the request took effect."""
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != server:
        os._exit(1)


def _answer(channel, **fields):
    channel.send(json.dumps(fields).encode())


def _ended(status):
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    if os.WIFEXITED(status):
        return {"exit": os.WEXITSTATUS(status)}
    return {"error": f"wait status {status}"}


def _end_all(children):
    for pid in sorted(children):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def run():
    """Serves fork requests on stdin until it closes. Returns in each forked
    child (whose stdin, stdout and stderr are then the connection's); in the
    server, exits the process when crashsim is done with it."""
    channel = socket.socket(fileno=os.dup(0))
    prctl = _prctl()
    children = set()
    # The extension's library mapped once here; each child only registers
    # its VFS (the entry point runs in the child, never in the server).
    vfs.preload_from_environment()
    # What the server built stays out of the collector's sight, so a child's
    # collections never touch (and copy) the pages it shares with the server.
    gc.collect()
    gc.freeze()
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(channel, _MAX_MESSAGE, 3)
        except OSError:
            message, fds = b"", []
        if not message and not fds:
            _end_all(children)
            os._exit(0)
        try:
            request = json.loads(message)
            op = request["op"]
        except (ValueError, KeyError, TypeError):
            _close(fds)
            _answer(channel, error=f"not a fork-server request: {message[:200]!r}")
            continue
        if op == "fork":
            threads = threading.active_count()
            if len(fds) != 3 or threads > 1:
                _close(fds)
                why = (
                    f"{threads} threads run: forking is unsafe"
                    if threads > 1
                    else f"a fork request carries 3 descriptors, this one {len(fds)}"
                )
                _answer(channel, error=why)
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            server = os.getpid()
            try:
                pid = os.fork()
            except OSError as exc:
                _close(fds)
                _answer(channel, error=f"fork: {exc}")
                continue
            if pid == 0:
                channel.close()
                os.setpgid(0, 0)
                _die_with_parent(prctl, server)
                for target, fd in enumerate(fds):
                    os.dup2(fd, target)
                _close(fds)
                os.environ.pop(ENV_FORK_SERVER, None)
                return
            try:
                os.setpgid(pid, pid)
            except OSError:
                pass  # the child has done it already (or is gone)
            _close(fds)
            children.add(pid)
            _answer(channel, pid=pid)
        elif op == "reap":
            pid = request.get("pid")
            children.discard(pid)
            try:
                _, status = os.waitpid(pid, 0)
                _answer(channel, **_ended(status))
            except (ChildProcessError, TypeError) as exc:
                _answer(channel, error=f"waitpid({pid!r}): {exc}")
        else:
            _close(fds)
            _answer(channel, error=f"unknown op {op!r}")


def _close(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
