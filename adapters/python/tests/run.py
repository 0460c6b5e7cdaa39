"""Runs the adapter tests (unittest discovery) and ends with a plain
'N passed, N failed' line; exits non-zero if any test failed.

    python3 adapters/python/tests/run.py        (from anywhere)

is the same as, from the repository root,

    python3 -m unittest discover -s adapters/python/tests -t adapters/python

A folder under adapters/python may be named instead, to run its tests
(`run.py sqlalchemy_store/tests`, with an interpreter that has SQLAlchemy).
"""

import os
import sys
import unittest

ADAPTERS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv):
    folder = argv[0] if argv else "tests"
    sys.path.insert(0, ADAPTERS)
    suite = unittest.defaultTestLoader.discover(
        os.path.join(ADAPTERS, folder), top_level_dir=ADAPTERS
    )
    result = unittest.TextTestRunner(verbosity=1).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    # One word before the counts: CI reads "word: N passed, N failed".
    label = "python" if folder == "tests" else folder.split("/")[0]
    print(f"{label}: {passed} passed, {failed} failed, {skipped} skipped")
    return 0 if result.wasSuccessful() and result.testsRun > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
