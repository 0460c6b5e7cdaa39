"""What the SQLAlchemy example's tests share: its adapter's path, a test
case that drives it over pipes (the SDK's tests/driver.py, as crashsim
does), and its modules in process with a bug switched on."""

import contextlib
import os

import bugs
import crashsim_adapter as ca
from tests.driver import AdapterCase, hello_fields

ADAPTER = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "adapter.py"
)


class ExampleCase(AdapterCase):
    """A run directory with the example's files set up, and its adapter."""

    def setUp(self):
        super().setUp()
        self.files_set_up = False

    def spawn(self, *args, script=ADAPTER, **options):
        return super().spawn(*args, script=script, **options)

    def dump(self, *args, script=ADAPTER, **hello_options):
        return super().dump(*args, script=script, **hello_options)

    def set_up_files(self, *args, **hello_options):
        setup = self.spawn(*args, purpose="setup", **hello_options)
        self.assertEqual(setup.ok("setup"), {})
        setup.close()

    def opened(self, role, *args, **hello_options):
        """A process with `role` open (the files set up first, once)."""
        if not self.files_set_up:
            self.set_up_files(*args, **hello_options)
            self.files_set_up = True
        adapter = self.spawn(*args, **hello_options)
        adapter.ok("open", role=role)
        return adapter

    def settings(self, **hello_options):
        """The hello's settings, for the example's classes in process."""
        return ca.Settings(hello_fields(self.dir, **hello_options))


@contextlib.contextmanager
def bug(name):
    """The example's modules in this process with the bug `name` on."""
    before = bugs.ACTIVE
    bugs.ACTIVE = frozenset([name])
    try:
        yield
    finally:
        bugs.ACTIVE = before


def request(key, kind="lock_budget", payload='{"trip_id":"t"}'):
    return ca.Request({"key": key, "kind": kind, "payload": payload})
