"""The SQLAlchemy example's tests. Run with an interpreter that has
SQLAlchemy (.ci/python installs one into target/python-sqlalchemy):

    target/python-sqlalchemy/bin/python adapters/python/tests/run.py \\
        sqlalchemy_store/tests

The example's own modules (bugs, engine, store, receiver, tables) are
imported by name, as adapter.py imports them: their folder goes on the
path, after adapters/python (whose `tests` package holds the SDK's driver;
this folder's `tests` is another).
"""

import os
import sys

EXAMPLE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if EXAMPLE not in sys.path:
    sys.path.append(EXAMPLE)
