"""`PRAGMA integrity_check` on a database file, on a connection of the SDK's
own: for a store whose `dump` returns only rows (its library owns the
connection, or it never thought of it), the SDK finds `store_integrity` and
`receiver_integrity` itself from the hello's paths."""


def integrity_check(path):
    """SQLite's `PRAGMA integrity_check` of the file at `path`, its lines
    joined by `; ` ("ok" when sound). The file must exist: it is opened for
    reading and writing without creating it (a read-only connection cannot
    open a WAL database whose `-shm` is gone, as after a kill), and only
    read."""
    import sqlite3
    from pathlib import Path

    uri = Path(path).absolute().as_uri() + "?mode=rw"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=0)
    try:
        return "; ".join(row[0] for row in conn.execute("PRAGMA integrity_check"))
    finally:
        conn.close()
