"""Loads crashsim's crash VFS into this process's SQLite, when crashsim
hands one over (runs with power loss: docs/adapter-protocol.md, "Power
loss").

crashsim starts the adapter with `CRASHSIM_VFS_EXTENSION` naming a SQLite
loadable extension. Loaded before the store opens its first connection, it
becomes the process's default VFS, so the store's own `sqlite3.connect(path)`
goes through it unchanged: crashsim can then cut the power at any write,
lose what was not synced, and answer `CURRENT_TIMESTAMP` with the simulated
clock.

Many Pythons are built without `Connection.enable_load_extension` (pyenv's
default build, several distribution and macOS builds), so this does not use
it: it finds the SQLite library the `sqlite3` module runs on and calls its
C API through `ctypes` (`sqlite3_load_extension` on a throwaway in-memory
connection; the extension stays loaded after it closes). A `sqlite3` module
linked statically, with no shared library to call, cannot be reached this
way; the error says so.
"""

import os
import sqlite3
import sys

ENV_EXTENSION = "CRASHSIM_VFS_EXTENSION"
ENTRY_POINT = b"sqlite3_crashsimvfs_init"

_SQLITE_OPEN_READWRITE = 0x02
_SQLITE_OPEN_CREATE = 0x04


def _library_path():
    """The shared SQLite library this process mapped for `sqlite3`, if any."""
    _ = sqlite3.sqlite_version  # the module (and its library) are loaded
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                if "libsqlite3" in os.path.basename(path):
                    return path
    except OSError:
        pass
    # Elsewhere (macOS): the module's own library, found by the loader.
    import _sqlite3  # noqa: PLC0415

    return getattr(_sqlite3, "__file__", None)


# The SQLite library's handle, once looked up (a fork server's children
# inherit it).
_library = None


def _sqlite_library():
    global _library
    if _library is None:
        import ctypes  # noqa: PLC0415 (paid only when crashsim hands one over)

        library_path = _library_path()
        if library_path is None:
            raise OSError("no shared SQLite library is mapped for the sqlite3 module")
        _library = ctypes.CDLL(library_path)
        _library.path = library_path
    return _library


def preload_from_environment():
    """For a fork server: maps the SQLite library and the extension crashsim
    named (`dlopen`, a few milliseconds of relocations) without calling the
    extension's entry point, so each forked child's `load` finds both mapped
    and only registers the VFS, in its own process. Quiet on failure: the
    child's `load` reports it."""
    path = os.environ.get(ENV_EXTENSION)
    if not path:
        return
    try:
        import ctypes  # noqa: PLC0415

        _sqlite_library()
        ctypes.CDLL(path)
    except (OSError, AttributeError):
        pass


def load(path):
    """Loads the extension at `path` into the `sqlite3` module's SQLite.
    Raises OSError with the cause if it cannot."""
    import ctypes  # noqa: PLC0415 (paid only when crashsim hands one over)

    library = _sqlite_library()
    library_path = library.path
    if not hasattr(library, "sqlite3_load_extension"):
        raise OSError(f"{library_path} has no sqlite3_load_extension")
    db = ctypes.c_void_p()
    flags = _SQLITE_OPEN_READWRITE | _SQLITE_OPEN_CREATE
    if library.sqlite3_open_v2(b":memory:", ctypes.byref(db), flags, None) != 0:
        raise OSError(f"{library_path}: sqlite3_open_v2(':memory:') failed")
    try:
        library.sqlite3_enable_load_extension(db, 1)
        message = ctypes.c_char_p()
        code = library.sqlite3_load_extension(
            db, os.fsencode(path), ENTRY_POINT, ctypes.byref(message)
        )
        if code != 0:
            detail = (message.value or b"").decode(errors="replace")
            raise OSError(
                f"{library_path} could not load {path} (code {code}): {detail}"
            )
    finally:
        library.sqlite3_close(db)


def load_from_environment():
    """Loads the extension crashsim named, if it named one; what went wrong
    goes to stderr (crashsim reads from the shared state whether the load
    took, and stops the run with exit code 2 if it did not)."""
    path = os.environ.get(ENV_EXTENSION)
    if not path:
        return False
    try:
        load(path)
    except (OSError, AttributeError) as exc:
        print(f"crashsim_adapter: cannot load crashsim's VFS: {exc}", file=sys.stderr)
        return False
    return True
