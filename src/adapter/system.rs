//! `AdapterSystem`: one run of an outside store. Every connection is a
//! process of its own; the run's schema set-up and final dump are processes
//! too. A role the adapter does not serve is served by the reference.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::TRANSCRIPT;
use super::client::{AdapterReceiver, AdapterStore, Connection};
use super::fork::client::ForkServer;
use super::process::{AdapterProcess, CallError, RunLog, SharedLog, log_dir};
use super::protocol::{self, Database, Hello, Identity, Purpose, Served};
use crate::store::receiver::ReferenceReceiver;
use crate::store::reference::ReferenceStore;
use crate::store::{
    Artifact, Backed, Receiver, Result, Snapshot, Store, StoreError, System, SystemConfig, Who, connection, retention,
};

/// What a run needs to start processes.
#[derive(Clone, Debug)]
pub struct Launch {
    pub command: String,
    pub timeout: Duration,
    pub served: Served,
    /// Whether the adapter declared `retries` (its receiver purges).
    pub retries: bool,
    /// Whether connections are forked by a fork server (the adapter
    /// declared `fork`, and the command line did not turn it off).
    pub fork: bool,
    /// The adapter is crashsim's own `serve` (`--mode process`): its files
    /// have the reference schema, which crashsim reads itself (`peek`).
    pub reference_schema: bool,
}

pub struct AdapterSystem {
    launch: Launch,
    config: SystemConfig,
    log: SharedLog,
    /// Processes started, for unique labels of the run's own processes.
    started: u64,
    /// The run's fork server, once the first process is asked for.
    server: Option<Rc<RefCell<ForkServer>>>,
    /// The process that dumps copies of the run's files while it goes
    /// (`peek`), once the first is asked for.
    peeker: Option<AdapterProcess>,
}

/// Sends `process` its hello and checks the answer (the protocol version):
/// what the adapter says it is.
pub fn shake_hands(
    process: &mut AdapterProcess,
    config: &SystemConfig,
    purpose: Purpose,
    who: &Who<'_>,
    command: &str,
) -> std::result::Result<Identity, CallError> {
    let hello = Hello {
        protocol: protocol::VERSION,
        crashsim: env!("CARGO_PKG_VERSION").to_string(),
        purpose,
        actor: who.actor.to_string(),
        incarnation: who.incarnation,
        seed: config.seed,
        store: Database::new(&config.store_path, &config.store_sqlite),
        receiver: Database::new(&config.receiver_path, &config.receiver_sqlite),
        hotel_failure: config.hotel_failure.into(),
        leases: config.leases,
        retries: config.retries,
        dedup_retention: config.dedup_retention,
    };
    let ok = process.call("hello", config.clock.now(), protocol::fields(&hello))?;
    let identity = Identity::deserialize(&ok).map_err(|error| {
        CallError::Broken(format!(
            "the adapter `{command}` ({}) answered `hello` with {ok}, which is not a handshake ({error})",
            process.label()
        ))
    })?;
    if identity.protocol != protocol::VERSION {
        return Err(CallError::Broken(format!(
            "the adapter `{command}` speaks adapter protocol version {}; this crashsim speaks version {}",
            identity.protocol,
            protocol::VERSION
        )));
    }
    if let Some(sdk) = identity
        .sdk
        .as_ref()
        .filter(|sdk| sdk.version != env!("CARGO_PKG_VERSION"))
    {
        return Err(CallError::Broken(sdk_mismatch(command, sdk)));
    }
    Ok(identity)
}

/// Why an adapter written with another version of the SDK is refused: the
/// SDK and the binary come from one commit (one wheel), and a mismatch is
/// how a stale vendored copy or a second install shows.
fn sdk_mismatch(command: &str, sdk: &protocol::Sdk) -> String {
    format!(
        "the adapter `{command}` is written with {} {}, but this crashsim is {}: install the SDK of this \
         crashsim (`pip install crashsim=={}` holds both, or `crashsim sdk python --out DIR` writes it)",
        sdk.name,
        sdk.version,
        env!("CARGO_PKG_VERSION"),
        env!("CARGO_PKG_VERSION")
    )
}

impl AdapterSystem {
    /// Starts a run: creates the schemas (the adapter's, and the reference's
    /// for a role it does not serve).
    pub fn create(launch: Launch, config: &SystemConfig) -> Result<AdapterSystem> {
        let dir = log_dir(&config.store_path);
        std::fs::create_dir_all(&dir).map_err(|error| StoreError::Broken(format!("{}: {error}", dir.display())))?;
        let run_dir = config
            .store_path
            .parent()
            .map(|parent| parent.display().to_string())
            .unwrap_or_default();
        let log = Rc::new(RefCell::new(RunLog {
            dir,
            run_dir,
            env: vfs_env(config)?,
            rendezvous: rendezvous(config)?,
            ..RunLog::default()
        }));
        let mut system = AdapterSystem {
            launch,
            config: config.clone(),
            log,
            started: 0,
            server: None,
            peeker: None,
        };
        if system.launch.served.store.is_none() {
            ReferenceStore::create_schema_for(config)?;
        }
        if system.launch.served.receiver.is_none() {
            ReferenceReceiver::create_schema(&config.receiver_path, &config.receiver_sqlite)?;
            if config.dedup_retention {
                retention::enable(&connection::open(&config.receiver_path, &config.receiver_sqlite)?)?;
            }
        }
        let mut setup = system.start(Purpose::Setup, "setup", 0)?;
        setup
            .call("setup", 0, serde_json::Map::new())
            .map_err(CallError::into_store_error)?;
        Ok(system)
    }

    /// Starts a process and shakes hands.
    fn start(&mut self, purpose: Purpose, actor: &str, incarnation: u32) -> Result<AdapterProcess> {
        self.started += 1;
        let label = match purpose {
            Purpose::Actor => format!("{actor}.{incarnation}"),
            _ => format!("{actor}.{}", self.started),
        };
        let (command, timeout) = (&self.launch.command, self.launch.timeout);
        let process = if self.launch.fork {
            let server = match &self.server {
                Some(server) => Rc::clone(server),
                None => {
                    let (stderr, env) = {
                        let log = self.log.borrow();
                        (log.dir.join("fork-server.stderr"), log.env.clone())
                    };
                    let server = ForkServer::start(command, timeout, &stderr, &env)
                        .map_err(|error| CallError::from(error).into_store_error())?;
                    Rc::clone(self.server.insert(Rc::new(RefCell::new(server))))
                }
            };
            AdapterProcess::fork(&server, command, &label, timeout, &self.log)
        } else {
            AdapterProcess::spawn(command, &label, timeout, &self.log)
        };
        let mut process = process.map_err(CallError::into_store_error)?;
        let who = Who { actor, incarnation };
        let identity = shake_hands(&mut process, &self.config, purpose, &who, &self.launch.command)
            .map_err(CallError::into_store_error)?;
        if identity.roles != self.launch.served {
            return Err(StoreError::Broken(format!(
                "the adapter `{}` ({label}) now serves {}, but served {} when crashsim started",
                self.launch.command,
                identity.roles.describe(),
                self.launch.served.describe()
            )));
        }
        Ok(process)
    }

    /// A store connection for `crashsim bench`: its own process, opened.
    pub fn open_bench(&mut self) -> Result<AdapterStore> {
        let who = Who {
            actor: "bench",
            incarnation: 0,
        };
        Ok(AdapterStore::new(self.open(&who, "store", Purpose::Bench)?))
    }

    /// A process for `who`'s connection in `role`, opened.
    fn open(&mut self, who: &Who<'_>, role: &str, purpose: Purpose) -> Result<Connection> {
        let mut process = self.start(purpose, who.actor, who.incarnation)?;
        let tick = self.config.clock.now();
        #[derive(serde::Deserialize)]
        struct Opened {
            synchronous: Option<u8>,
        }
        let fields = protocol::fields(&json!({ "role": role }));
        let ok = process
            .call("open", tick, fields)
            .map_err(CallError::into_store_error)?;
        let opened = Opened::deserialize(&ok).map_err(|error| {
            StoreError::Broken(format!(
                "the adapter `{}` answered `open` with {ok} ({error})",
                self.launch.command
            ))
        })?;
        Ok(Connection::new(process, self.config.clock.clone(), opened.synchronous))
    }

    /// The snapshot of the adapter's answer `ok` to a `dump` (`what`, for
    /// the error), with the role crashsim serves, if one, read by
    /// `read_store` or `read_receiver`.
    fn dumped(
        &self,
        ok: serde_json::Value,
        what: &str,
        read_store: impl FnOnce() -> rusqlite::Result<Snapshot>,
        read_receiver: impl FnOnce() -> rusqlite::Result<Snapshot>,
    ) -> Result<Snapshot> {
        let dumped: Snapshot = serde_json::from_value(ok).map_err(|error| {
            StoreError::Broken(format!(
                "the adapter `{}` answered {what} with something that is not a dump ({error})",
                self.launch.command
            ))
        })?;
        let served = self.launch.served;
        Ok(match (served.store, served.receiver) {
            (Some(_), Some(_)) => dumped,
            (Some(_), None) => {
                let mut snapshot = dumped;
                snapshot.merge(read_receiver()?);
                snapshot
            }
            (None, _) => {
                let mut snapshot = read_store()?;
                snapshot.merge(dumped);
                snapshot
            }
        })
    }
}

impl System for AdapterSystem {
    fn open_store(&mut self, who: &Who<'_>) -> Result<Box<dyn Store>> {
        if self.launch.served.store.is_none() {
            let store = ReferenceStore::open(&self.config.store_path, &self.config.store_sqlite)?;
            return Ok(Box::new(store.with_clock(self.config.clock.clone())));
        }
        Ok(Box::new(AdapterStore::new(self.open(who, "store", Purpose::Actor)?)))
    }

    fn open_receiver(&mut self, who: &Who<'_>) -> Result<Box<dyn Receiver>> {
        if self.launch.served.receiver.is_none() {
            let receiver = ReferenceReceiver::open(
                &self.config.receiver_path,
                &self.config.receiver_sqlite,
                self.config.hotel_failure,
            )?;
            return Ok(Box::new(receiver.with_retention(&self.config)));
        }
        let connection = self.open(who, "receiver", Purpose::Actor)?;
        Ok(Box::new(AdapterReceiver::new(connection, self.launch.retries)))
    }

    fn open_observer(&mut self) -> Result<Box<dyn Store>> {
        if self.launch.served.store.is_none() {
            return self.open_store(&Who::OBSERVER);
        }
        Ok(Box::new(AdapterStore::new(self.open(
            &Who::OBSERVER,
            "store",
            Purpose::Observer,
        )?)))
    }

    fn dump(&mut self) -> Result<Snapshot> {
        // Every other process is gone when the final state is read.
        self.peeker = None;
        let mut process = self.start(Purpose::Dump, "dump", 0)?;
        let ok = process
            .call("dump", self.config.clock.now(), serde_json::Map::new())
            .map_err(CallError::into_store_error)?;
        drop(process);
        let (store, receiver) = (&self.config.store_path, &self.config.receiver_path);
        self.dumped(
            ok,
            "`dump`",
            || Snapshot::read_store(store, None),
            || Snapshot::read_receiver(receiver, None),
        )
    }

    /// crashsim's own `serve` keeps the reference schema, read as
    /// in-process. An outside store's copies are dumped by the adapter's
    /// own `dump`, on a process of their own started at the first peek:
    /// spawned without crashsim's VFS (the copies are no file of the run,
    /// and nothing it does may count as the run's), its hello naming the
    /// copies, which are made at the same paths each time. A role crashsim
    /// serves is read from its copy, as `dump` reads it.
    fn offers_peek(&self) -> bool {
        true
    }

    fn peek(&mut self, store: &std::path::Path, receiver: &std::path::Path) -> Result<Option<Snapshot>> {
        if self.launch.reference_schema {
            return Ok(Some(Snapshot::read_copy(store, receiver)?));
        }
        let peeker = match &mut self.peeker {
            Some(peeker) => peeker,
            None => {
                let (command, timeout) = (&self.launch.command, self.launch.timeout);
                let mut process = AdapterProcess::spawn_without_vfs(command, "peek", timeout, &self.log)
                    .map_err(CallError::into_store_error)?;
                let mut copies = self.config.clone();
                copies.store_path = store.to_path_buf();
                copies.receiver_path = receiver.to_path_buf();
                let who = Who {
                    actor: "peek",
                    incarnation: 0,
                };
                shake_hands(&mut process, &copies, Purpose::Dump, &who, command)
                    .map_err(CallError::into_store_error)?;
                self.peeker.insert(process)
            }
        };
        let ok = peeker
            .call("dump", self.config.clock.now(), serde_json::Map::new())
            .map_err(CallError::into_store_error)?;
        self.dumped(
            ok,
            "`dump` of the copies",
            || Snapshot::read_copy_store(store),
            || Snapshot::read_copy_receiver(receiver),
        )
        .map(Some)
    }

    /// On a process of its own (`backup`), or the reference's backup when
    /// crashsim serves the store role.
    fn backup(&mut self, dest: &std::path::Path, part: u32) -> Result<Backed> {
        if self.launch.served.store.is_none() {
            return crate::store::backup::backup(&self.config, dest).map(|()| Backed::Complete);
        }
        let mut process = self.start(Purpose::Backup, "backup", 0)?;
        let fields = match part {
            0 => json!({ "path": dest.display().to_string() }),
            part => json!({ "path": dest.display().to_string(), "part": part }),
        };
        let ok = process
            .call("backup", self.config.clock.now(), protocol::fields(&fields))
            .map_err(CallError::into_store_error)?;
        Ok(match ok.get("more").and_then(serde_json::Value::as_bool) {
            Some(true) => Backed::More,
            _ => Backed::Complete,
        })
    }

    /// The adapter's own dump of the backup's path (its schema is its own):
    /// the store's part of it.
    fn dump_backup(&mut self, dest: &std::path::Path) -> Result<Snapshot> {
        if self.launch.served.store.is_none() {
            return crate::store::backup::dump_backup(&self.config, dest);
        }
        let mut process = self.start(Purpose::Dump, "dump", 0)?;
        let fields = protocol::fields(&json!({ "path": dest.display().to_string() }));
        let ok = process
            .call("dump", self.config.clock.now(), fields)
            .map_err(CallError::into_store_error)?;
        drop(process);
        serde_json::from_value(ok).map_err(|error| {
            StoreError::Broken(format!(
                "the adapter `{}` answered `dump` of a backup with something that is not a dump ({error})",
                self.launch.command
            ))
        })
    }

    fn artifacts(&mut self) -> Vec<Artifact> {
        let mut log = self.log.borrow_mut();
        // Rendered only for a seed whose files are kept (its exchanges are
        // moved, not copied: the run is over).
        let transcript = std::mem::take(&mut log.transcript);
        let mut artifacts = vec![Artifact::deferred(TRANSCRIPT, move || {
            let mut jsonl = Vec::new();
            for exchange in &transcript {
                serde_json::to_writer(&mut jsonl, exchange).expect("exchanges serialise");
                jsonl.push(b'\n');
            }
            jsonl
        })];
        // Each process's stderr is kept beside processes.json, which names
        // it there (the run's own folder is gone after the run): empty if
        // the process wrote nothing, and nothing is kept.
        let mut records = log.processes.clone();
        let mut stderrs = Vec::new();
        for record in &mut records {
            let content = std::fs::read(&record.stderr).unwrap_or_default();
            record.stderr = if content.is_empty() {
                String::new()
            } else {
                let name = format!("{}.stderr", record.label);
                stderrs.push(Artifact::new(format!("adapter/{name}"), content));
                name
            };
        }
        let processes = serde_json::to_string_pretty(&records).expect("records serialise") + "\n";
        artifacts.push(Artifact::new("adapter/processes.json", processes.into_bytes()));
        artifacts.extend(stderrs);
        let server = std::fs::read(log.dir.join("fork-server.stderr")).unwrap_or_default();
        if !server.is_empty() {
            artifacts.push(Artifact::new("adapter/fork-server.stderr", server));
        }
        artifacts
    }
}

/// Where a run that suspends calls inside the store (`[preempt]`) hears
/// that one parked: nothing for any other run.
fn rendezvous(config: &SystemConfig) -> Result<Option<Rc<super::rendezvous::Rendezvous>>> {
    let Some(state) = &config.vfs_state else {
        return Ok(None);
    };
    super::rendezvous::Rendezvous::open(state)
        .map(|rendezvous| rendezvous.map(Rc::new))
        .map_err(|error| StoreError::Environment(format!("the preemption rendezvous in {}: {error}", state.display())))
}

/// What tells a run's processes to load crashsim's VFS extension, and
/// where its shared state is: nothing for a run without power loss.
pub(super) fn vfs_env(config: &SystemConfig) -> Result<Vec<(String, String)>> {
    let Some(state) = &config.vfs_state else {
        return Ok(Vec::new());
    };
    let extension = crate::vfs::extension::path().map_err(StoreError::Environment)?;
    Ok(vec![
        (
            crate::vfs::extension::ENV_EXTENSION.to_string(),
            extension.display().to_string(),
        ),
        (
            crate::vfs::extension::ENV_STATE.to_string(),
            state.display().to_string(),
        ),
    ])
}
