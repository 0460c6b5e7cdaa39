//! Outside stores: any program that speaks the adapter protocol
//! (docs/adapter-protocol.md) is an `Implementation`, whatever its language.
//!
//! - `protocol`: the messages, shared by both sides.
//! - `process`: one adapter process: start, one request at a time with a
//!   wall-clock limit, `SIGKILL`; what a misbehaving process means.
//! - `lines`, `rendezvous`: an answer read, or word that the process
//!   parked inside its SQLite (`[preempt]`), and resuming it.
//! - `client`: the `Store` and `Receiver` traits as requests.
//! - `system`: one run: a process per connection, set-up, the dump.
//! - `serve`: the other side, for crashsim's own implementations
//!   (`crashsim serve NAME`, which `--mode process` runs).
//!
//! `Adapter::probe` starts the command once before any seed runs, so that a
//! command that is not there, exits at once or speaks another version is
//! bad input (exit code 2), named with what it printed, not a finding.

mod client;
pub mod fork;
mod gate;
mod lines;
mod process;
pub mod protocol;
mod rendezvous;
pub mod serve;
mod system;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

pub use client::AdapterStore;
use process::{AdapterProcess, CallError, RunLog};
pub use process::{Exchange, ProcessRecord};
use protocol::{Identity, Purpose, Served};
use system::{AdapterSystem, Launch};

use crate::store::{Engine, Granularity, Implementation, ReferenceEngine, Result, Roles, System, SystemConfig};

/// The artifact that holds an adapter run's transcript: every request and
/// answer of every process, in order, one JSON line each.
pub const TRANSCRIPT: &str = "adapter/transcript.jsonl";

/// How long an adapter may take to answer one request, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// An outside store, as `--sut CMD` names it.
pub struct Adapter {
    launch: Launch,
    identity: Identity,
    engine: &'static dyn Engine,
    files: BTreeMap<String, String>,
    vfs: VfsProbe,
}

/// Whether the adapter's SQLite loaded crashsim's VFS extension when its
/// probe was handed one: read from what the extension itself counted in
/// the shared state, not from the adapter's word.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VfsProbe {
    /// `sqlite3_libversion_number()` of the SQLite that loaded it.
    pub sqlite_version: Option<u64>,
    /// Why the extension could not be offered at all (crashsim's side).
    pub unavailable: Option<String>,
}

impl VfsProbe {
    pub fn loaded(&self) -> bool {
        self.sqlite_version.is_some()
    }

    /// `3.40.1` from `3040001`.
    pub fn version_text(&self) -> Option<String> {
        self.sqlite_version
            .map(|n| format!("{}.{}.{}", n / 1_000_000, n / 1_000 % 1_000, n % 1_000))
    }
}

impl std::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adapter")
            .field("command", &self.launch.command)
            .field("identity", &self.identity)
            .finish()
    }
}

/// A command that cannot be an adapter (before any seed runs).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AdapterError(String);

impl Adapter {
    /// Starts `command` once, reads its handshake, and kills it. With
    /// `fork`, a run uses the adapter's fork server if it declares one.
    pub fn probe(command: &str, timeout: Duration, fork: bool) -> std::result::Result<Adapter, AdapterError> {
        let probe_dir = tempfile::tempdir().map_err(|error| AdapterError(format!("a temporary folder: {error}")))?;
        let mut config = default_config(probe_dir.path());
        // Offer the VFS extension, to learn whether the adapter's SQLite
        // loads it (what power loss and the simulated clock need).
        let shared = crate::vfs::CrashVfs::clock_only(
            &crate::vfs::crash::unique_name("probe"),
            &probe_dir.path().join("vfs"),
            0,
        );
        let mut vfs = VfsProbe::default();
        match &shared {
            Ok(shared) => config.vfs_state = shared.shared_dir(),
            Err(error) => vfs.unavailable = Some(error.to_string()),
        }
        let env = match system::vfs_env(&config) {
            Ok(env) => env,
            Err(error) => {
                vfs.unavailable = Some(error.to_string());
                Vec::new()
            }
        };
        let log = std::rc::Rc::new(std::cell::RefCell::new(RunLog {
            dir: probe_dir.path().to_path_buf(),
            env,
            ..RunLog::default()
        }));
        let started = AdapterProcess::spawn(command, "probe", timeout, &log);
        let stderr_tail = || {
            let text = std::fs::read_to_string(probe_dir.path().join("probe.stderr")).unwrap_or_default();
            tail(&text, 12)
        };
        let mut process = started.map_err(|error| AdapterError(message_of(error, command, "")))?;
        let who = crate::store::Who {
            actor: "probe",
            incarnation: 0,
        };
        let identity = system::shake_hands(&mut process, &config, Purpose::Probe, &who, command)
            .map_err(|error| AdapterError(message_of(error, command, &stderr_tail())))?;
        if let Ok(shared) = &shared {
            let control = shared.control();
            if control.loads.load(std::sync::atomic::Ordering::Acquire) > 0 {
                vfs.sqlite_version = Some(control.sqlite_version.load(std::sync::atomic::Ordering::Acquire));
            }
            drop(process);
            shared.retire();
        }
        if identity.roles.store.is_none() && identity.roles.receiver.is_none() {
            return Err(AdapterError(format!(
                "the adapter `{command}` serves no role: its handshake lists neither `store` nor `receiver`"
            )));
        }
        Ok(Adapter {
            launch: Launch {
                command: command.to_string(),
                timeout,
                served: identity.roles,
                retries: identity.can(protocol::RETRIES),
                fork: fork && identity.can(fork::CAPABILITY),
                reference_schema: false,
            },
            files: file_hashes(command, &identity.sources),
            identity,
            engine: &ReferenceEngine,
            vfs,
        })
    }

    /// crashsim's own implementation `name`, served by this executable
    /// (`exe serve NAME`): what `--mode process` runs. Its engine (the
    /// application-side choices) stays in crashsim, as in-process.
    pub fn serve(exe: &Path, name: &str, timeout: Duration, fork: bool) -> std::result::Result<Adapter, AdapterError> {
        let implementation =
            crate::mutants::resolve(name).ok_or_else(|| AdapterError(format!("unknown implementation {name:?}")))?;
        let command = format!("{} serve {name}", shell_word(&exe.display().to_string()));
        let mut adapter = Adapter::probe(&command, timeout, fork)?;
        adapter.engine = implementation.engine();
        adapter.files = BTreeMap::new();
        adapter.launch.reference_schema = true;
        Ok(adapter)
    }

    pub fn command(&self) -> &str {
        &self.launch.command
    }

    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// SHA-256 of each file the command names that exists (the adapter's
    /// script), so a replay capsule can tell when the store changed.
    pub fn files(&self) -> &BTreeMap<String, String> {
        &self.files
    }

    /// What the probe learnt of the VFS extension.
    /// The version of the SQLite the store runs on: what crashsim's VFS
    /// extension read from it, or else what its hello said; `None` if
    /// neither says.
    pub fn store_sqlite_version(&self) -> Option<String> {
        self.vfs.version_text().or_else(|| self.identity.sqlite_version.clone())
    }

    pub fn vfs(&self) -> &VfsProbe {
        &self.vfs
    }

    pub fn served(&self) -> Served {
        self.launch.served
    }

    /// Whether a run's connections are forked by the adapter's fork server.
    pub fn forks(&self) -> bool {
        self.launch.fork
    }

    /// One store connection for measurements (`crashsim bench --sut`): the
    /// schemas set up in `config`'s files, then a process of its own. The
    /// session's processes end when it is dropped.
    /// Without `fork`, its processes are started even if the adapter has a
    /// fork server.
    pub fn bench_session(&self, config: &SystemConfig, fork: bool) -> Result<BenchSession> {
        if self.launch.served.store.is_none() {
            return Err(crate::store::StoreError::Invalid(format!(
                "the adapter `{}` serves no store: there is no append path to measure",
                self.launch.command
            )));
        }
        let mut launch = self.launch.clone();
        launch.fork &= fork;
        let mut system = AdapterSystem::create(launch, config)?;
        let store = system.open_bench()?;
        Ok(BenchSession { store, system })
    }
}

/// A store connection of an outside store, for `crashsim bench`.
pub struct BenchSession {
    store: AdapterStore,
    system: AdapterSystem,
}

impl BenchSession {
    /// The connection: `append_with_commands` is one `append` request.
    pub fn store(&mut self) -> &mut AdapterStore {
        &mut self.store
    }

    /// One request that does nothing (`ping`).
    pub fn ping(&mut self) -> Result<()> {
        self.store.ping()
    }

    /// A new store connection (process) to its `open` answer, killed
    /// and reaped before this returns.
    pub fn reconnect(&mut self) -> Result<()> {
        let store = self.system.open_bench()?;
        drop(store);
        Ok(())
    }
}

impl Implementation for Adapter {
    fn name(&self) -> &str {
        &self.identity.name
    }

    fn description(&self) -> &str {
        &self.launch.command
    }

    fn system(&self, config: &SystemConfig) -> Result<Box<dyn System>> {
        Ok(Box::new(AdapterSystem::create(self.launch.clone(), config)?))
    }

    fn engine(&self) -> &dyn Engine {
        self.engine
    }

    fn roles(&self) -> Roles {
        Roles {
            store: self.launch.served.store.unwrap_or(Granularity::Step),
            receiver: self.launch.served.receiver.unwrap_or(Granularity::Step),
        }
    }

    fn in_process(&self) -> bool {
        false
    }

    fn kills_inside_calls(&self) -> bool {
        self.vfs.loaded()
    }

    /// Leases need the store role: crashsim's reference serves them, an
    /// adapter's store only if its handshake declares the capability.
    fn leases(&self) -> bool {
        self.launch.served.store.is_none() || self.identity.can(protocol::LEASES)
    }

    /// Retry timers need the store role: crashsim's reference serves them,
    /// an adapter's store only with the `retries` capability (the ops
    /// `schedule_retry` and `timers`). An adapter's receiver without it keeps
    /// its de-dup records forever, which is safe.
    fn retries(&self) -> bool {
        self.launch.served.store.is_none() || self.identity.can(protocol::RETRIES)
    }

    /// Backups need the store role: crashsim's reference takes them, an
    /// adapter's store only with the `backup` capability.
    fn backups(&self) -> bool {
        self.launch.served.store.is_none() || self.identity.can(protocol::BACKUP)
    }
}

/// The files `dir/store.db` and `dir/receiver.db` with a scenario's default
/// settings (WAL, synchronous=FULL, busy timeout 0): what a probe's hello
/// states, and what `crashsim bench --sut` measures with.
pub fn default_config(dir: &Path) -> SystemConfig {
    let settings = crate::scenario::SqliteConfig::default();
    SystemConfig {
        store_path: dir.join("store.db"),
        receiver_path: dir.join("receiver.db"),
        store_sqlite: settings.store_settings(),
        receiver_sqlite: settings.receiver_settings(),
        hotel_failure: crate::ratio::Ratio::new(1, 4),
        seed: 0,
        clock: crate::store::Clock::default(),
        leases: false,
        retries: false,
        dedup_retention: false,
        vfs_state: None,
    }
}

/// What a failed probe says: the cause, then what the adapter printed.
fn message_of(error: CallError, command: &str, stderr: &str) -> String {
    let cause = match error {
        CallError::Answered(answer) => format!(
            "the adapter `{command}` answered `hello` with an error ({:?}): {}",
            answer.kind, answer.message
        ),
        CallError::Died(_) => format!("the adapter `{command}` exited before answering `hello`"),
        CallError::Broken(message) => message,
        CallError::Preempted { point, .. } => format!("the adapter `{command}` parked at {point} during `hello`"),
    };
    if stderr.is_empty() {
        cause
    } else {
        format!("{cause}\nits stderr ended with:\n{stderr}")
    }
}

/// The last `lines` lines of `text`, indented.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    let start = all.len().saturating_sub(lines);
    all[start..]
        .iter()
        .map(|line| format!("  | {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text`, then the tail of every non-empty stderr file a run's or a
/// session's processes left in `dir/adapter/`, read now (the directory may
/// go soon): what an error about an adapter should show.
pub fn with_stderr_tails(dir: &Path, text: &str) -> String {
    let mut text = text.to_string();
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir.join("adapter"))
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    for file in files
        .iter()
        .filter(|file| file.extension().is_some_and(|ext| ext == "stderr"))
    {
        let stderr = std::fs::read_to_string(file).unwrap_or_default();
        if !stderr.trim().is_empty() {
            let label = file.file_stem().map(|stem| stem.to_string_lossy()).unwrap_or_default();
            text.push_str(&format!(
                "\nthe stderr of its {label} process ended with:\n{}",
                tail(&stderr, 12)
            ));
        }
    }
    text
}

/// SHA-256 (first 16 hex digits) of every word of `command` that names a
/// file (the adapter's scripts; executables, such as the interpreter, are
/// left out) and of every file the adapter's hello lists as its `sources`
/// (the modules it imports), named as given. A file named twice (the
/// command's absolute path and the SDK's path relative to the working
/// directory) is listed once, under the first name: the command's, as the
/// user typed it.
fn file_hashes(command: &str, sources: &[String]) -> BTreeMap<String, String> {
    let mut seen = std::collections::BTreeSet::new();
    command
        .split_whitespace()
        .map(|word| word.trim_matches(|c| c == '"' || c == '\''))
        .chain(sources.iter().map(String::as_str))
        .filter(|word| Path::new(word).is_file())
        .filter(|word| seen.insert(std::fs::canonicalize(word).unwrap_or_else(|_| PathBuf::from(word))))
        .filter_map(|word| {
            // An executable is known by its first bytes: it is not read
            // whole (crashsim's own, for `--mode process`, is some 60 MB).
            let mut file = std::fs::File::open(word).ok()?;
            let mut magic = [0u8; 4];
            let start = file.read(&mut magic).ok()?;
            if magic[..start] == *b"\x7fELF" {
                return None;
            }
            let mut bytes = magic[..start].to_vec();
            file.read_to_end(&mut bytes).ok()?;
            let digest = Sha256::digest(&bytes);
            Some((word.to_string(), crate::store::service::hex16(&digest)))
        })
        .collect()
}

/// `text` as one word of a `/bin/sh` command line: as it is when plain,
/// else single-quoted.
pub fn shell_word(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:=@%,".contains(c))
    {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::file_hashes;

    #[test]
    fn a_file_named_twice_is_hashed_once_under_the_commands_name() {
        // Tests run from the repository root: the relative and the absolute
        // name are one file.
        let relative = "adapters/python/example_store.py";
        let absolute = std::fs::canonicalize(relative).expect("the example");
        let command = format!("python3 -S {}", absolute.display());
        let sources = [relative.to_string(), "adapters/python/example_schema.py".to_string()];
        let files = file_hashes(&command, &sources);
        let names: Vec<&String> = files.keys().collect();
        assert_eq!(
            names,
            [
                &absolute.display().to_string(),
                &"adapters/python/example_schema.py".to_string()
            ],
            "{files:?}"
        );
    }
}
