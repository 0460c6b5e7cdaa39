//! The release workflow (`.github/workflows/release.yml`) is as tested as
//! it can be off GitHub: it parses; it builds, for each platform the issue
//! names, the wheel `.ci/wheel --release` builds (the same maturin, the
//! same `build --locked --release`); and its own shell steps run here, by
//! bash, on the wheel (`common::wheel`: the real one under `.ci/wheel`, a
//! stand-in otherwise): the binary taken out of the wheel into its archive
//! runs, and the install test installs the wheel into a fresh venv with no
//! Rust toolchain on PATH and runs seeds.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

fn workflow() -> Yaml {
    let text = std::fs::read_to_string(common::root().join(".github/workflows/release.yml")).expect("release.yml");
    YamlLoader::load_from_str(&text).expect("release.yml is YAML").remove(0)
}

/// A job's step named `name`.
fn step<'a>(yaml: &'a Yaml, job: &str, name: &str) -> &'a Yaml {
    yaml["jobs"][job]["steps"]
        .as_vec()
        .expect("steps")
        .iter()
        .find(|step| step["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("job {job} has no step named {name:?}"))
}

#[test]
fn a_version_tag_builds_the_wheel_ci_wheel_builds_for_four_platforms() {
    let yaml = workflow();
    let tags: Vec<&str> = yaml["on"]["push"]["tags"]
        .as_vec()
        .expect("on: push: tags")
        .iter()
        .filter_map(Yaml::as_str)
        .collect();
    assert_eq!(tags, ["v*"]);
    let targets: BTreeMap<&str, &str> = yaml["jobs"]["wheels"]["strategy"]["matrix"]["include"]
        .as_vec()
        .expect("the platforms")
        .iter()
        .map(|entry| {
            (
                entry["target"].as_str().expect("target"),
                entry["manylinux"].as_str().expect("manylinux"),
            )
        })
        .collect();
    assert_eq!(
        targets,
        BTreeMap::from([
            ("aarch64-apple-darwin", "off"),
            ("aarch64-unknown-linux-gnu", "2014"),
            ("x86_64-apple-darwin", "off"),
            ("x86_64-unknown-linux-gnu", "2014"),
        ])
    );
    let build = step(&yaml, "wheels", "The wheel (binary and SDK)");
    assert_eq!(build["uses"].as_str(), Some("PyO3/maturin-action@v1"));
    let args = build["with"]["args"].as_str().expect("args");
    assert_eq!(args, "--locked --release --out dist");
    // .ci/wheel --release: the same maturin, the same build.
    let script = std::fs::read_to_string(common::root().join(".ci/wheel")).expect(".ci/wheel");
    let version = build["with"]["maturin-version"].as_str().expect("a pinned maturin");
    assert!(
        script.contains(&format!("MATURIN_VERSION={version}")),
        ".ci/wheel pins maturin {version}"
    );
    assert!(
        script.contains(r#"maturin" build --locked "${profile[@]}""#)
            && script.contains("--release) profile=(--release)"),
        ".ci/wheel --release runs `maturin build --locked --release`"
    );
    let pyproject = std::fs::read_to_string(common::root().join("pyproject.toml")).expect("pyproject.toml");
    assert!(
        pyproject.contains(&format!("\"maturin>={version},<2\"")),
        "pip's build of it uses that maturin too"
    );
}

/// `script` by bash in `dir`, the workflow's expressions replaced.
fn bash(dir: &Path, script: &str, expressions: &[(&str, &str)], env: &[(&str, String)]) -> String {
    let mut script = script.to_string();
    for (expression, value) in expressions {
        script = script.replace(&format!("${{{{ {expression} }}}}"), value);
    }
    let output = Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
        .current_dir(dir)
        .envs(env.iter().map(|(key, value)| (*key, value)))
        .output()
        .expect("bash runs");
    let said = format!("{}{}", common::stdout(&output), common::stderr(&output));
    assert!(
        output.status.success(),
        "`{script}` exited with {:?}\n{said}",
        output.status.code()
    );
    said
}

#[test]
fn its_steps_take_the_binary_out_of_the_wheel_and_install_the_wheel_without_rust() {
    let Some(python) = common::python() else { return };
    let temp = tempfile::tempdir().expect("a temp dir");
    let checkout = temp.path().join("checkout");
    std::fs::create_dir_all(checkout.join("dist")).expect("dist");
    for file in ["Cargo.toml", "README.md"] {
        std::fs::copy(common::root().join(file), checkout.join(file)).expect("a checkout's file");
    }
    let wheels = common::wheel::dir(&python, &temp.path().join("wheel"));
    for entry in std::fs::read_dir(&wheels)
        .expect("the wheel's folder")
        .filter_map(|entry| entry.ok())
    {
        std::fs::copy(entry.path(), checkout.join("dist").join(entry.file_name())).expect("the wheel");
    }
    // `python` as setup-python gives it, and nothing of Rust.
    let bin = temp.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    std::os::unix::fs::symlink(&python, bin.join("python")).expect("python");
    std::os::unix::fs::symlink(&python, bin.join("python3")).expect("python3");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let yaml = workflow();

    let archive = step(&yaml, "wheels", "The binary alone, from the wheel")["run"]
        .as_str()
        .expect("run");
    let env = [("PATH", path.clone())];
    bash(&checkout, archive, &[("matrix.platform", "linux-x86_64")], &env);
    let name = format!("crashsim-{}-linux-x86_64", env!("CARGO_PKG_VERSION"));
    assert!(checkout.join(format!("dist/{name}.tar.gz")).is_file(), "the archive");
    let version = bash(&checkout, &format!("{name}/crashsim --version"), &[], &env);
    assert!(
        version.contains(env!("CARGO_PKG_VERSION")),
        "the archived binary runs: {version}"
    );

    // The install test, on the wheel alone (the archive is no wheel).
    std::fs::remove_file(checkout.join(format!("dist/{name}.tar.gz"))).expect("the archive");
    let install = step(
        &yaml,
        "test",
        "Installed with no Rust toolchain on PATH, away from any checkout",
    )["run"]
        .as_str()
        .expect("run")
        .replace("--seeds 20", "--seeds 2");
    let runner = temp.path().join("runner");
    std::fs::create_dir(&runner).expect("the runner's temp");
    let said = bash(
        &checkout,
        &install,
        &[],
        &[
            ("PATH", path),
            ("RUNNER_TEMP", runner.display().to_string()),
            ("CI", "true".into()),
        ],
    );
    assert!(
        said.contains("smoke") && said.contains(&format!("crashsim_adapter {}", env!("CARGO_PKG_VERSION"))),
        "{said}"
    );
}
