"""The SDK as a package: sdk_build.py's wheel and sdist, and a `pip install`
into a fresh virtual environment, offline, after which the example store
runs from a directory of its own with the installed SDK."""

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

from tests.driver import ADAPTERS, AdapterCase, append_two

sys.path.insert(0, ADAPTERS)
import sdk_build  # noqa: E402

EXAMPLE_FILES = ("example_store.py", "example_schema.py", "example_options.py")


def package_modules():
    folder = os.path.join(ADAPTERS, "crashsim_adapter")
    return sorted(name for name in os.listdir(folder) if name.endswith(".py"))


class WheelTest(unittest.TestCase):
    def test_wheel_holds_every_module_with_a_true_record(self):
        with tempfile.TemporaryDirectory() as directory:
            name = sdk_build.build_wheel(directory)
            self.assertEqual(name, "crashsim_adapter-0.1.0-py3-none-any.whl")
            with zipfile.ZipFile(os.path.join(directory, name)) as wheel:
                names = wheel.namelist()
                modules = sorted(
                    path.split("/", 1)[1]
                    for path in names
                    if path.startswith("crashsim_adapter/")
                )
                self.assertEqual(modules, package_modules())
                info = "crashsim_adapter-0.1.0.dist-info"
                metadata = wheel.read(f"{info}/METADATA").decode()
                self.assertIn("Name: crashsim-adapter\n", metadata)
                self.assertIn("Requires-Python: >=3.11\n", metadata)
                record = wheel.read(f"{info}/RECORD").decode().splitlines()
                self.assertEqual(len(record), len(names))
                for line in record:
                    path, digest, size = line.split(",")
                    if path.endswith("RECORD"):
                        continue
                    data = wheel.read(path)
                    expected = base64.urlsafe_b64encode(
                        hashlib.sha256(data).digest()
                    ).rstrip(b"=")
                    self.assertEqual(digest, f"sha256={expected.decode()}", path)
                    self.assertEqual(int(size), len(data), path)

    def test_the_same_files_build_the_same_wheel(self):
        with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
            first = os.path.join(one, sdk_build.build_wheel(one))
            second = os.path.join(two, sdk_build.build_wheel(two))
            with open(first, "rb") as a, open(second, "rb") as b:
                self.assertEqual(a.read(), b.read())

    def test_sdist_carries_the_backend_and_the_package(self):
        with tempfile.TemporaryDirectory() as directory:
            name = sdk_build.build_sdist(directory)
            with tarfile.open(os.path.join(directory, name)) as archive:
                names = archive.getnames()
        base = "crashsim_adapter-0.1.0/"
        for path in ("pyproject.toml", "sdk_build.py", "PKG-INFO", "README.md"):
            self.assertIn(base + path, names)
        for module in package_modules():
            self.assertIn(f"{base}crashsim_adapter/{module}", names)


class InstallTest(AdapterCase):
    def test_pip_installs_the_sdk_offline_and_the_example_runs_with_it(self):
        venv = os.path.join(self.dir, "venv")
        subprocess.run(
            [sys.executable, "-m", "venv", venv], check=True, capture_output=True
        )
        python = os.path.join(venv, "bin", "python")
        # From the sdist, as an index would serve it: pip unpacks it and
        # builds the wheel with the backend the sdist carries.
        sdist = os.path.join(self.dir, sdk_build.build_sdist(self.dir))
        environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        installed = subprocess.run(
            [python, "-m", "pip", "install", "--no-index", "--quiet", sdist],
            capture_output=True,
            text=True,
            env=environment,
            cwd=self.dir,
        )
        self.assertEqual(installed.returncode, 0, installed.stderr)

        store = os.path.join(self.dir, "my-store")
        os.mkdir(store)
        for name in EXAMPLE_FILES:
            shutil.copy(os.path.join(ADAPTERS, name), store)
        found = subprocess.run(
            [python, "-c", "import crashsim_adapter; print(crashsim_adapter.__file__)"],
            capture_output=True,
            text=True,
            env=environment,
            cwd=store,
            check=True,
        ).stdout
        self.assertTrue(found.startswith(venv), found)

        script = os.path.join(store, "example_store.py")
        setup = self.spawn(script=script, python=python, purpose="setup")
        self.assertEqual(setup.ok("setup"), {})
        setup.close()
        writer = self.spawn(script=script, python=python)
        writer.ok("open", role="store")
        self.assertEqual(append_two(writer)["seq"], 1)


if __name__ == "__main__":
    unittest.main()
