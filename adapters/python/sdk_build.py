"""The SDK's PEP 517 build backend: standard library only, so that

    pip install ./adapters/python
    pip install "git+<crashsim repository>@<rev>#subdirectory=adapters/python"
    pip install DIR            (DIR written by `crashsim sdk python --out DIR`)

work offline and on any Python 3.11+, with nothing to download (setuptools
needs the `wheel` package that a fresh 3.11 venv lacks, and a network to
fetch it). The SDK is one pure-Python package, so its wheel is a zip of that
package plus the three metadata files the wheel format asks for. The name,
version and summary come from pyproject.toml; nothing here needs editing
when a module is added to the package.

Hooks: build_wheel, build_sdist, build_editable (a .pth file pointing here).
"""

import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "crashsim_adapter"
# Fixed timestamps, so that a rebuild of the same files gives the same bytes.
ZIP_TIME = (2020, 1, 1, 0, 0, 0)
TAR_TIME = 1577836800


def _project():
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as file:
        return tomllib.load(file)["project"]


def _names():
    project = _project()
    name = project["name"]
    return project, name, name.replace("-", "_"), project["version"]


def _metadata(project):
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project['requires-python']}",
        f"License: {project['license']['text']}",
    ]
    readme = os.path.join(HERE, project.get("readme", "README.md"))
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as file:
            return "\n".join(lines) + "\n\n" + file.read()
    return "\n".join(lines) + "\n"


def _sources():
    """The package's files, relative to HERE, sorted (no caches)."""
    found = []
    for root, dirs, files in os.walk(os.path.join(HERE, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith((".pyc", ".pyo")):
                found.append(os.path.relpath(os.path.join(root, name), HERE))
    return found


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"{path},sha256={digest.decode()},{len(data)}"


def _wheel(directory, files):
    """Writes a wheel holding `files` (archive path -> bytes); its name."""
    project, _, dist, version = _names()
    info = f"{dist}-{version}.dist-info"
    files = dict(files)
    files[f"{info}/METADATA"] = _metadata(project).encode()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: crashsim sdk_build\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [_record_line(path, data) for path, data in files.items()]
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel_name = f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(
        os.path.join(directory, wheel_name), "w", zipfile.ZIP_DEFLATED
    ) as archive:
        for path, data in files.items():
            entry = zipfile.ZipInfo(path, ZIP_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    return wheel_name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {}
    for path in _sources():
        with open(os.path.join(HERE, path), "rb") as file:
            files[path.replace(os.sep, "/")] = file.read()
    return _wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _, _, dist, _ = _names()
    return _wheel(wheel_directory, {f"{dist}.pth": (HERE + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    project, _, dist, version = _names()
    base = f"{dist}-{version}"
    members = ["pyproject.toml", "sdk_build.py", "README.md", *_sources()]
    extra = {"PKG-INFO": _metadata(project).encode()}
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as archive:
        for path in members:
            if not os.path.exists(os.path.join(HERE, path)):
                continue
            with open(os.path.join(HERE, path), "rb") as file:
                extra[path.replace(os.sep, "/")] = file.read()
        for path, data in extra.items():
            entry = tarfile.TarInfo(f"{base}/{path}")
            entry.size, entry.mtime, entry.mode = len(data), TAR_TIME, 0o644
            archive.addfile(entry, io.BytesIO(data))
    return name
