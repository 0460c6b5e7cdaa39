//! The SDK and the binary are one version: the crate's (Cargo.toml), the
//! SDK package's (adapters/python/pyproject.toml, written by `crashsim sdk
//! python`), the SDK's own word at `hello` (crashsim_adapter/version.py)
//! and the wheel's (pyproject.toml takes the crate's). crashsim refuses an
//! SDK of another version at `hello` (tests/suite/adapter.rs), so a release that
//! bumps one and not the others fails here first.

use crate::common;

fn read(relative: &str) -> String {
    std::fs::read_to_string(common::root().join(relative)).unwrap_or_else(|error| panic!("{relative}: {error}"))
}

#[test]
fn the_sdk_and_the_wheel_carry_the_crates_version() {
    let ours = env!("CARGO_PKG_VERSION");
    let package: toml::Value = toml::from_str(&read("adapters/python/pyproject.toml")).expect("toml");
    assert_eq!(
        package["project"]["version"].as_str(),
        Some(ours),
        "adapters/python/pyproject.toml"
    );
    let version = read("adapters/python/crashsim_adapter/version.py");
    assert!(
        version.contains(&format!("VERSION = \"{ours}\"")),
        "crashsim_adapter/version.py says another version than {ours}:\n{version}"
    );
    let wheel: toml::Value = toml::from_str(&read("pyproject.toml")).expect("toml");
    let dynamic = wheel["project"]["dynamic"].as_array().expect("dynamic");
    assert!(
        dynamic.iter().any(|key| key.as_str() == Some("version")),
        "the wheel's version comes from Cargo.toml (maturin), never written twice"
    );
    assert_eq!(wheel["tool"]["maturin"]["bindings"].as_str(), Some("bin"));
    assert_eq!(
        wheel["tool"]["maturin"]["module-name"].as_str(),
        Some("crashsim_adapter")
    );
}

#[test]
fn the_readme_and_the_ci_templates_pin_this_version() {
    let ours = env!("CARGO_PKG_VERSION");
    assert!(
        read("README.md").contains(&format!("pip install crashsim=={ours}")),
        "the README's install pins crashsim=={ours}"
    );
    for template in ["ci/templates/github.yml", "ci/templates/gitlab.yml"] {
        assert!(
            read(template).contains(&format!("CRASHSIM_VERSION: \"{ours}\"")),
            "{template} pins crashsim {ours}"
        );
    }
}
