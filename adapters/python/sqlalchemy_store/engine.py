"""engine: one SQLAlchemy engine per database file, configured the way
SQLAlchemy's SQLite documentation says.

- **PRAGMAs on every connection**, in a `connect` listener: the pool opens
  connections whenever it needs one, and `synchronous` and the busy timeout
  belong to the connection, not the file. `journal_mode` is read back (a
  file that refused WAL is an error). The busy timeout is 0: crashsim lets
  one process work at a time, so a lock held elsewhere is not let go while
  this one waits (adapters/python/README.md).
- **Transactions are SQLAlchemy's, begun IMMEDIATE**: the driver's own
  BEGIN is turned off (`isolation_level = None` on the sqlite3 connection)
  and a `begin` listener emits `BEGIN IMMEDIATE`, the documented recipe
  ("Serializable isolation / Savepoints / Transactional DDL") with the
  write lock taken up front, so an append never fails half-way on a lock
  upgrade. `with engine.begin() as conn:` is then one SQLite transaction.
"""

# The dialect is imported here, at import time, not by the first
# create_engine: a fork server's children then find it loaded (15 ms each).
import sqlalchemy.dialects.sqlite.pysqlite  # noqa: F401
from sqlalchemy import URL, create_engine, event

import bugs


def sqlite_engine(database, *, pragmas=True):
    """An engine for the hello's `database` (a `ca.Database`), its
    listeners attached. `pragmas=False` leaves the PRAGMA listener off (the
    pragmas_one_engine bug)."""
    url = URL.create("sqlite+pysqlite", database=database.path)
    if bugs.on("autocommit_engine"):
        # "pysqlite's transaction handling is broken: let SQLite autocommit."
        engine = create_engine(url, isolation_level="AUTOCOMMIT")
    else:
        engine = create_engine(url)
        event.listen(engine, "connect", _driver_begin_off)
        event.listen(engine, "begin", _begin_immediate)
    if pragmas:
        event.listen(engine, "connect", _pragmas(database))
    return engine


def create_tables(database, metadata):
    """`metadata`'s tables in `database`'s file, if missing (setup)."""
    engine = sqlite_engine(database)
    metadata.create_all(engine)
    engine.dispose()


def read_all(database, queries):
    """The rows of each of `queries` (name -> statement), read in one
    transaction on an engine of their own (a dump, after every other
    process of the run was killed)."""
    engine = sqlite_engine(database)
    try:
        with engine.connect() as conn:
            return {name: conn.execute(query).all() for name, query in queries.items()}
    finally:
        engine.dispose()


def _driver_begin_off(dbapi_connection, _record):
    # The sqlite3 driver no longer emits BEGIN (nor COMMIT before DDL) itself.
    dbapi_connection.isolation_level = None


def _begin_immediate(conn):
    conn.exec_driver_sql("BEGIN IMMEDIATE")


def _pragmas(database):
    def on_connect(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA journal_mode={database.journal_mode}")
            (mode,) = cursor.fetchone()
            if mode.lower() != database.journal_mode:
                raise RuntimeError(
                    f"journal_mode stayed {mode}, wanted {database.journal_mode}"
                )
            cursor.execute(f"PRAGMA synchronous={database.synchronous}")
            cursor.execute(f"PRAGMA busy_timeout={database.busy_timeout_ms}")
        finally:
            cursor.close()

    return on_connect
