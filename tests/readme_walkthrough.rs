//! The README's "Test your own store in ten minutes", followed as a new
//! user would: in a fresh repository holding a Python store (the example,
//! as `my_adapter.py`, with a bug switched on), with a fresh virtual
//! environment first on `PATH` and no crashsim and no Rust toolchain on it,
//! the README's own `sh` blocks run in order by bash: `pip install
//! crashsim==VERSION` (the binary and the SDK, from the wheel in the
//! user repository's `PIP_FIND_LINKS`: the real one under `.ci/wheel`, a
//! stand-in otherwise), the run that catches the bug, the replay, the
//! shrink into the user's corpus, the corpus replayed, the bug fixed and
//! the passing run pinned, the CI files written. The blocks of the
//! from-source alternative (`cargo install`, `pip install git+…`, the SDK
//! written by `crashsim sdk python`) are left out: they need a toolchain
//! and the network. Two rewrites keep it short and exact: `--seeds 200`
//! runs 3 seeds, and the README's example seed 17 becomes the first seed
//! that failed.

mod common;

use std::process::{Command, Output};

/// The `sh` blocks of the README's walkthrough, in order.
fn walkthrough_blocks() -> Vec<String> {
    let readme = std::fs::read_to_string(common::root().join("README.md")).expect("README");
    let start = readme.find("## Test your own store").expect("the walkthrough section");
    let section = &readme[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |end| end + 3);
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in section[..end].lines() {
        match (&mut current, line.trim_start()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(_), "```") => blocks.push(current.take().expect("in a block")),
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

struct Repository(common::user_repo::UserRepository);

impl std::ops::Deref for Repository {
    type Target = common::user_repo::UserRepository;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Repository {
    fn new(python: &str) -> Repository {
        Repository(common::user_repo::UserRepository::new(python))
    }

    /// `script` by bash in the repository, the store's bug switched on or off.
    fn sh(&self, script: &str, bug: Option<&str>) -> Output {
        let mut command = Command::new("bash");
        command
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
            .current_dir(&self.dir)
            .env("PATH", &self.path)
            .env("CI", "true")
            .envs(self.pip_env())
            .env_remove("PYTHONPATH")
            .env_remove("EXAMPLE_STORE_BUG");
        if let Some(bug) = bug {
            command.env("EXAMPLE_STORE_BUG", bug);
        }
        command.output().expect("bash runs")
    }
}

fn expect(output: &Output, code: i32, what: &str) -> String {
    let out = common::stdout(output);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{what}: exit {:?}\n{out}{}",
        output.status.code(),
        common::stderr(output)
    );
    out
}

#[test]
fn a_new_user_follows_the_readme_from_nothing_to_a_gated_store() {
    let Some(python) = common::python() else { return };
    let repo = Repository::new(&python);
    // A receiver that strips keys: `key_strip` answers a near-miss key with
    // the original key's result (I7), and settles, so a seed is quick.
    let bug = Some("key_strip");
    let bare = repo.sh(
        "command -v cargo || command -v rustc || command -v crashsim || echo none",
        None,
    );
    assert_eq!(
        common::stdout(&bare).trim(),
        "none",
        "the user starts with no Rust toolchain and no crashsim"
    );
    let mut seed: Option<String> = None;
    let mut ran = Vec::new();
    for block in walkthrough_blocks() {
        if ["cargo install", "git+", "crashsim sdk python"]
            .iter()
            .any(|from_source| block.contains(from_source))
        {
            continue;
        }
        let mut script = block.replace("--seeds 200", "--seeds 3");
        if let Some(seed) = &seed {
            script = script
                .replace("--seed 17", &format!("--seed {seed}"))
                .replace("smoke-17", &format!("smoke-{seed}"));
        }
        let output = repo.sh(&script, bug);
        if script.contains("crashsim run smoke") {
            let out = expect(&output, 1, &script);
            let failed = out
                .lines()
                .find_map(|line| line.strip_prefix("fail: seed="))
                .and_then(|rest| rest.split_whitespace().next())
                .expect("a failing seed");
            assert!(out.contains("note: shrink it to a small trace"), "{out}");
            let page = repo
                .dir
                .join(format!("reports/smoke+example_store_key_strip/{failed}/report.html"));
            assert!(page.is_file(), "the README's report page is at {}", page.display());
            seed = Some(failed.to_string());
        } else if script.contains("crashsim replay smoke") || script.contains("crashsim shrink") {
            assert!(seed.is_some(), "{script} runs after a failure was found");
            expect(&output, 1, &script);
        } else {
            expect(&output, 0, &script);
        }
        ran.push(script);
    }
    let seed = seed.expect("the walkthrough runs the store");
    let installed = repo.sh(
        "command -v crashsim && python -c 'import crashsim_adapter as ca; print(ca.__version__)'",
        None,
    );
    let said = expect(&installed, 0, "where crashsim came from");
    assert!(
        said.contains("/python/bin/crashsim") && said.contains(env!("CARGO_PKG_VERSION")),
        "crashsim and its SDK came from the wheel, into the venv: {said}"
    );
    let install = format!("pip install crashsim=={}", env!("CARGO_PKG_VERSION"));
    for step in [
        install.as_str(),
        "crashsim run smoke",
        "crashsim replay smoke",
        "crashsim shrink",
        "crashsim run --regressions",
        "crashsim ci init github",
    ] {
        assert!(
            ran.iter().any(|script| script.contains(step)),
            "the walkthrough no longer runs `{step}`"
        );
    }
    let capsule = repo.dir.join(format!("scenarios/regressions/smoke-{seed}.toml"));
    assert!(capsule.is_file(), "the shrink wrote the capsule into the corpus");
    assert!(repo.dir.join(".github/workflows/crashsim.yml").is_file());
    assert!(repo.dir.join(".gitlab-ci.yml").is_file());

    // Step 7: the bug fixed, the passing run pinned in its place; the
    // corpus then replays green against the fixed store.
    // The fix is an edit of the store's own file (the bug itself is
    // switched by the environment here): the capsule's hashes see it.
    let adapter = repo.dir.join("my_adapter.py");
    let mut text = std::fs::read_to_string(&adapter).expect("my_adapter.py");
    text.push_str("\n# fixed: keys compared exactly\n");
    std::fs::write(&adapter, text).expect("the fix");
    let pin = format!(
        "crashsim replay --capsule scenarios/regressions/smoke-{seed}.toml --quiet --save-capsule scenarios/regressions/smoke-{seed}.toml"
    );
    let pinned = repo.sh(&pin, None);
    expect(&pinned, 0, &pin);
    let said = String::from_utf8_lossy(&pinned.stderr);
    assert!(
        said.contains("my_adapter.py changed since the capsule was made")
            && said.contains("the capsule saved pins this run")
            && !said.contains("non-determinism"),
        "re-pinning after a fix says why the trace differs: {said}"
    );
    let repinned = std::fs::read_to_string(&capsule).expect("the capsule");
    assert!(repinned.contains("verdict = \"pass\""), "{repinned}");
    let corpus = "crashsim run --regressions";
    expect(&repo.sh(corpus, None), 0, corpus);
    // And the pinned capsule is a gate: the bug back, it goes red.
    expect(&repo.sh(corpus, bug), 1, corpus);
}
