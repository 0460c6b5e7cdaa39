//! `crashsim serve NAME`: one of crashsim's own implementations (the
//! reference, or a mutant) served over the adapter protocol, one connection
//! per process, exactly as an outside store would be.
//!
//! This is what `--mode process` runs, so every process-mode test is a test
//! of the protocol, and it is a working example of the server side for
//! anyone writing an SDK in another language.
//!
//! A Rust store given to the library API is served the same way by the
//! user's own program (`serve_if_asked`, `Harness::serve_from_this_program`):
//! that is how its calls are suspended inside SQLite (`[preempt]`).

/// The variable that asks a program to serve its implementation of this
/// name on stdin and stdout instead of doing what it usually does.
pub const ENV_SERVE: &str = "CRASHSIM_SERVE";

use std::io::{BufRead, Write};

use serde::Deserialize;
use serde_json::{Value, json};

use super::protocol::{self, ErrorAnswer, ErrorKind, Hello, Identity, Served};
use crate::model::Command;
use crate::store::{
    Backed, Implementation, Receiver, Request, RetryPolicy, Store, StoreError, System, SystemConfig, Who,
};

/// What the process holds once `open` has run.
enum Connection {
    None,
    Store(Box<dyn Store>),
    Receiver(Box<dyn Receiver>),
}

struct Server<'a> {
    name: String,
    implementation: &'a dyn Implementation,
    config: Option<(SystemConfig, String, u32)>,
    connection: Connection,
}

/// Serves `name` on stdin and stdout until stdin closes; the exit code.
pub fn main(name: &str) -> u8 {
    let Some(implementation) = crate::mutants::resolve(name) else {
        eprintln!("crashsim serve: unknown implementation {name:?}");
        return 2;
    };
    serve(name, implementation)
}

/// For a program that tests its own store with the library API: if
/// crashsim started it to serve a connection (`CRASHSIM_SERVE` names
/// `implementation`), serves it and returns the exit code to end with;
/// otherwise `None`. Call it first in `main`.
pub fn serve_if_asked(implementation: &dyn Implementation) -> Option<u8> {
    let asked = std::env::var(ENV_SERVE).ok()?;
    if asked != implementation.name() {
        eprintln!(
            "crashsim: asked to serve {asked:?} (${ENV_SERVE}), but this program serves {:?}",
            implementation.name()
        );
        return Some(2);
    }
    Some(serve(&asked, implementation))
}

/// Serves `implementation` as `name` on stdin and stdout until stdin
/// closes; the exit code.
pub fn serve(name: &str, implementation: &dyn Implementation) -> u8 {
    if name == "group_commit" {
        eprintln!("crashsim serve: {name} shares state between connections and cannot be served one per process");
        return 2;
    }
    // Asked to be a fork server: this returns in each child (and in the
    // server once crashsim is done with it).
    match super::fork::server::become_child() {
        super::fork::server::Role::ServerDone(code) => return code,
        super::fork::server::Role::Plain | super::fork::server::Role::Child => {}
    }
    // A run with power loss: this process's SQLite goes through the crash
    // VFS, as an outside store's does once it loads the extension (in each
    // process: the extension counts its loads).
    if let Some(dir) = std::env::var_os(crate::vfs::extension::ENV_STATE) {
        let registered = crashsim_vfs::extension::register_logging(
            crate::vfs::shim::api(),
            std::path::Path::new(&dir),
            crashsim_vfs::extension::VFS_NAME,
            crashsim_vfs::extension::Process::Store,
        );
        if let Err(message) = registered {
            eprintln!("crashsim serve: the crash VFS: {message}");
            return 2;
        }
    }
    let mut server = Server {
        name: name.to_string(),
        implementation,
        config: None,
        connection: Connection::None,
    };
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let answer = server.answer(&line);
        if writeln!(stdout, "{answer}").and_then(|()| stdout.flush()).is_err() {
            break;
        }
    }
    0
}

#[derive(Deserialize)]
struct Envelope {
    id: u64,
    op: String,
    #[serde(default)]
    tick: u64,
}

impl Server<'_> {
    fn answer(&mut self, line: &str) -> Value {
        let request: Value = match serde_json::from_str(line) {
            Ok(value) => value,
            Err(error) => return json!({ "id": 0, "error": failed(ErrorKind::Invalid, error.to_string()) }),
        };
        let Ok(envelope) = serde_json::from_value::<Envelope>(request.clone()) else {
            return json!({ "id": 0, "error": failed(ErrorKind::Invalid, "no id or op".to_string()) });
        };
        // The run's time, as the request carries it (leases expire by it).
        if let Some((config, _, _)) = &self.config {
            config.clock.set(envelope.tick);
        }
        match self.handle(&envelope.op, request) {
            Ok(ok) => json!({ "id": envelope.id, "ok": ok }),
            Err(error) => json!({ "id": envelope.id, "error": error }),
        }
    }

    fn config(&self) -> Result<&SystemConfig, ErrorAnswer> {
        match &self.config {
            Some((config, _, _)) => Ok(config),
            None => Err(ErrorAnswer {
                kind: ErrorKind::Invalid,
                message: "no hello yet".to_string(),
            }),
        }
    }

    fn system(&self) -> Result<Box<dyn System>, ErrorAnswer> {
        self.implementation
            .system(self.config()?)
            .map_err(|error| ErrorAnswer::of(&error))
    }

    fn handle(&mut self, op: &str, request: Value) -> Result<Value, ErrorAnswer> {
        match op {
            "hello" => {
                let hello: Hello = parse(request)?;
                let config = SystemConfig {
                    store_path: hello.store.path.clone().into(),
                    receiver_path: hello.receiver.path.clone().into(),
                    store_sqlite: hello.store.settings(),
                    receiver_sqlite: hello.receiver.settings(),
                    hotel_failure: hello.hotel_failure.ratio(),
                    seed: hello.seed,
                    clock: crate::store::Clock::default(),
                    leases: hello.leases,
                    retries: hello.retries,
                    dedup_retention: hello.dedup_retention,
                    vfs_state: None,
                };
                self.config = Some((config, hello.actor, hello.incarnation));
                let identity = Identity {
                    protocol: protocol::VERSION,
                    name: self.name.clone(),
                    version: Some(env!("CARGO_PKG_VERSION").to_string()),
                    roles: Served {
                        store: Some(self.implementation.roles().store),
                        receiver: Some(self.implementation.roles().receiver),
                    },
                    capabilities: [
                        (self.implementation.leases(), protocol::LEASES),
                        (self.implementation.retries(), protocol::RETRIES),
                        (self.implementation.backups(), protocol::BACKUP),
                        (true, super::fork::CAPABILITY),
                    ]
                    .into_iter()
                    .filter(|(has, _)| *has)
                    .map(|(_, capability)| capability.to_string())
                    .collect(),
                    sources: Vec::new(),
                    sqlite_version: Some(crate::platform::sqlite_version().to_string()),
                    sdk: None,
                };
                Ok(serde_json::to_value(identity).expect("identities serialise"))
            }
            "setup" => self.system().map(|_| json!({})),
            "ping" => Ok(json!({})),
            // Without `path`, the run's databases; with it, the store's
            // part of the backup there.
            "dump" => {
                let backup: Backup = parse(request)?;
                let mut system = self.system()?;
                let snapshot = match backup.path {
                    Some(path) => system.dump_backup(std::path::Path::new(&path)),
                    None => system.dump(),
                };
                let snapshot = snapshot.map_err(|error| ErrorAnswer::of(&error))?;
                Ok(serde_json::to_value(snapshot).expect("dumps serialise"))
            }
            "backup" => {
                let backup: Backup = parse(request)?;
                let Some(path) = backup.path else {
                    return Err(failed(ErrorKind::Invalid, "`backup` needs a `path`".to_string()));
                };
                let mut system = self.system()?;
                let backed = system
                    .backup(std::path::Path::new(&path), backup.part)
                    .map_err(|error| ErrorAnswer::of(&error))?;
                Ok(match backed {
                    Backed::Complete => json!({}),
                    Backed::More => json!({ "more": true }),
                })
            }
            "open" => {
                #[derive(Deserialize)]
                struct Open {
                    role: String,
                }
                let open: Open = parse(request)?;
                let mut system = self.system()?;
                let (_, actor, incarnation) = self.config.as_ref().expect("checked by system()");
                let who = Who {
                    actor,
                    incarnation: *incarnation,
                };
                let (connection, synchronous) = match open.role.as_str() {
                    "store" => {
                        let store = system.open_store(&who).map_err(|error| ErrorAnswer::of(&error))?;
                        let synchronous = store.synchronous();
                        (Connection::Store(store), synchronous)
                    }
                    "receiver" => {
                        let receiver = system.open_receiver(&who).map_err(|error| ErrorAnswer::of(&error))?;
                        let synchronous = receiver.synchronous();
                        (Connection::Receiver(receiver), synchronous)
                    }
                    other => return Err(failed(ErrorKind::Invalid, format!("no role {other:?}"))),
                };
                self.connection = connection;
                Ok(json!({ "synchronous": synchronous }))
            }
            _ => match &mut self.connection {
                Connection::Store(store) => store_op(&mut **store, op, request),
                Connection::Receiver(receiver) => receiver_op(&mut **receiver, op, request),
                Connection::None => Err(failed(ErrorKind::Unsupported, format!("`{op}` before `open`"))),
            },
        }
    }
}

/// The `path` of `backup` and of a backup's `dump`, and a backup's part.
#[derive(Deserialize)]
struct Backup {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    part: u32,
}

fn failed(kind: ErrorKind, message: String) -> ErrorAnswer {
    ErrorAnswer { kind, message }
}

fn parse<T: for<'de> Deserialize<'de>>(request: Value) -> Result<T, ErrorAnswer> {
    serde_json::from_value(request).map_err(|error| failed(ErrorKind::Invalid, error.to_string()))
}

fn of(error: StoreError) -> ErrorAnswer {
    ErrorAnswer::of(&error)
}

#[derive(Deserialize)]
struct Fields {
    #[serde(default)]
    workflow_id: String,
    #[serde(default)]
    expected_seq: u64,
    #[serde(default)]
    event_seq: u64,
    #[serde(default)]
    index: usize,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    payload: String,
    #[serde(default)]
    limit: usize,
    #[serde(default)]
    command_id: String,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    commands: Vec<Command>,
    #[serde(default)]
    owner: String,
    #[serde(default)]
    lease_ticks: u64,
    #[serde(default)]
    token: Option<u64>,
    #[serde(default)]
    error: String,
    #[serde(default)]
    policy: Option<RetryPolicy>,
    #[serde(default)]
    jitter_permille: u64,
}

fn store_op(store: &mut dyn Store, op: &str, request: Value) -> Result<Value, ErrorAnswer> {
    let f: Fields = parse(request)?;
    Ok(match op {
        "load" => json!({ "events": store.load(&f.workflow_id).map_err(of)? }),
        "heads" => json!({ "heads": store.heads().map_err(of)? }),
        "commands" => json!({ "rows": store.commands(&f.workflow_id, f.event_seq).map_err(of)? }),
        "pending" => json!({ "rows": store.pending(f.limit).map_err(of)? }),
        "mark_done" => json!({ "changed": store.mark_done(&f.command_id, f.result.as_deref()).map_err(of)? }),
        "claim" => json!({ "claimed": store.claim(&f.owner, f.lease_ticks, f.limit).map_err(of)? }),
        "mark_done_leased" => {
            let changed = store
                .mark_done_leased(&f.command_id, f.token.unwrap_or_default(), f.result.as_deref())
                .map_err(of)?;
            json!({ "changed": changed })
        }
        "schedule_retry" => {
            let policy = f
                .policy
                .ok_or_else(|| failed(ErrorKind::Invalid, "schedule_retry without a policy".to_string()))?;
            let retried = store
                .schedule_retry(&f.command_id, f.token, &f.error, &policy, f.jitter_permille)
                .map_err(of)?;
            json!({ "retried": retried })
        }
        "timers" => json!({ "timers": store.timers().map_err(of)? }),
        "begin" => store.begin().map(|()| json!({})).map_err(of)?,
        "insert_event" => {
            let seq = store
                .insert_event(&f.workflow_id, f.expected_seq, &f.kind, &f.payload)
                .map_err(of)?;
            json!({ "seq": seq })
        }
        "insert_command" => {
            let command = Command {
                kind: f.kind,
                payload: f.payload,
            };
            let id = store
                .insert_command(&f.workflow_id, f.event_seq, f.index, &command)
                .map_err(of)?;
            json!({ "command_id": id })
        }
        "commit" => store.commit().map(|()| json!({})).map_err(of)?,
        "rollback" => store.rollback().map(|()| json!({})).map_err(of)?,
        "append" => {
            let (seq, command_ids) = store
                .append_with_commands(&f.workflow_id, f.expected_seq, &f.kind, &f.payload, &f.commands)
                .map_err(of)?;
            json!({ "seq": seq, "command_ids": command_ids })
        }
        other => return Err(failed(ErrorKind::Unsupported, format!("no store op `{other}`"))),
    })
}

fn receiver_op(receiver: &mut dyn Receiver, op: &str, message: Value) -> Result<Value, ErrorAnswer> {
    #[derive(Deserialize)]
    struct WithRequest {
        request: Request,
    }
    let request = || parse::<WithRequest>(message.clone()).map(|with| with.request);
    Ok(match op {
        "begin" => receiver.begin().map(|()| json!({})).map_err(of)?,
        "commit" => receiver.commit().map(|()| json!({})).map_err(of)?,
        "rollback" => receiver.rollback().map(|()| json!({})).map_err(of)?,
        "lookup" => serde_json::to_value(receiver.lookup(&request()?).map_err(of)?).expect("lookups serialise"),
        "apply" => serde_json::to_value(receiver.apply(&request()?).map_err(of)?).expect("results serialise"),
        "purge_dedup" => {
            #[derive(Deserialize)]
            struct Purge {
                now: u64,
                retention_ticks: u64,
            }
            let purge: Purge = parse(message.clone())?;
            let removed = receiver.purge_dedup(purge.now, purge.retention_ticks).map_err(of)?;
            json!({ "removed": removed })
        }
        "handle" => {
            let handled = receiver.handle(&request()?).map_err(of)?;
            let mut answer = serde_json::to_value(&handled.outcome).expect("outcomes serialise");
            if let (Some(id), Value::Object(map)) = (handled.effect_id, &mut answer) {
                map.insert("effect_id".to_string(), Value::from(id));
            }
            answer
        }
        other => return Err(failed(ErrorKind::Unsupported, format!("no receiver op `{other}`"))),
    })
}
