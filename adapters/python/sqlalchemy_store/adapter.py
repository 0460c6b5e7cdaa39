"""sqlalchemy_store: an event store, outbox and idempotent receiver written
with SQLAlchemy Core (2.0 style), served to crashsim through crashsim_adapter
at `call` granularity (one request per append, one per delivery).

    crashsim run smoke --sut "target/python-sqlalchemy/bin/python \\
        adapters/python/sqlalchemy_store/adapter.py" --seeds 20

It is written the way a Python team writes such a store: an engine per file
with its pool, the PRAGMAs in a `connect` listener, `with engine.begin() as
conn:` transactions begun IMMEDIATE (engine.py), `Table` definitions
(tables.py), the primary key's `IntegrityError` as the optimistic-concurrency
conflict (store.py), and a receiver that writes the effect and its de-dup
record in one transaction (receiver.py). It serves leases and retry timers,
so it runs every shipped scenario. `--bug NAME` switches on a known mistake
(bugs.py).
"""

import os
import sys

# The checkout's SDK (adapters/python/crashsim_adapter), beside this folder,
# unless one is installed.
try:
    import crashsim_adapter as ca
except ImportError:
    sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import crashsim_adapter as ca

import bugs
from receiver import Receiver
from store import Store


def main(argv):
    names = bugs.parse(argv, __doc__)
    ca.serve(
        store=Store,
        receiver=Receiver,
        name="+".join(["sqlalchemy_store", *sorted(names)]),
        version="1.0",
    )


if __name__ == "__main__":
    main(sys.argv[1:])
