"""The files a store is made of, for the hello's `sources`: crashsim hashes
them so that a replay capsule can tell when the store changed."""

import os
import sys

_SOURCES = None


def source_files():
    """The files of the Python modules loaded from under the working
    directory (the user's adapter and the store it imports, not the
    standard library nor installed packages), relative to it and sorted.
    The hello lists them so crashsim hashes them: a capsule then tells
    when the store changed. Computed once (forked children inherit it)."""
    global _SOURCES
    if _SOURCES is None:
        here = os.path.realpath(os.getcwd())
        found = set()
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if not path or not path.endswith(".py"):
                continue
            real = os.path.realpath(path)
            inside = os.path.relpath(real, here)
            parts = inside.split(os.sep)
            if parts[0] == os.pardir or {"site-packages", "dist-packages"} & set(parts):
                continue
            found.add(inside)
        _SOURCES = sorted(found)
    return _SOURCES
