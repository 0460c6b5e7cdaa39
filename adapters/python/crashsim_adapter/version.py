"""The SDK's version: crashsim's own. The SDK and the binary come from one
commit (one wheel, `pip install crashsim`), and crashsim refuses at `hello`
an adapter written with an SDK of another version, naming both.
tests/suite/sdk_version.rs keeps this equal to Cargo.toml's and pyproject.toml's."""

NAME = "crashsim_adapter"
VERSION = "0.1.0"
