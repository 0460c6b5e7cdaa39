"""crashsim_adapter.vfs: loading crashsim's VFS extension through ctypes.

Loading the real extension into each interpreter, and what it does there,
is tested from crashsim's side (tests/suite/power_outside.rs), which builds it;
here, what the loader does without one and with a wrong one."""

import os
import unittest
from unittest import mock

from crashsim_adapter import vfs


class LoaderTest(unittest.TestCase):
    def test_nothing_happens_without_the_variable(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertFalse(vfs.load_from_environment())

    def test_the_sqlite_library_is_found(self):
        path = vfs._library_path()
        self.assertIsNotNone(path, "the sqlite3 module runs on a shared library")

    def test_a_file_that_is_no_extension_is_refused_with_the_cause(self):
        with self.assertRaises(OSError) as caught:
            vfs.load(__file__)
        self.assertIn("could not load", str(caught.exception))

    def test_a_failed_load_is_reported_not_raised(self):
        with (
            mock.patch.dict(os.environ, {vfs.ENV_EXTENSION: "/nonexistent/x.so"}),
            mock.patch("sys.stderr") as stderr,
        ):
            self.assertFalse(vfs.load_from_environment())
        written = "".join(call.args[0] for call in stderr.write.call_args_list)
        self.assertIn("cannot load crashsim's VFS", written)


if __name__ == "__main__":
    unittest.main()
