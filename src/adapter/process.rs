//! One adapter process: started with `/bin/sh -c`, in a process group of
//! its own, spoken to one request at a time, and ended with `SIGKILL`.
//!
//! Every way a process can let crashsim down is sorted here, once:
//!
//! - it exits, or its pipe breaks, without having been killed: `Died`, a
//!   finding about the store (the trace records it, invariant A1);
//! - it does not answer within the wall-clock limit: killed, then `Died`;
//! - it answers with something that is not a protocol message, or the
//!   answer to another request, or `unsupported`: `Broken`, which stops
//!   the run without a verdict (exit code 2);
//! - it parks inside its SQLite at a scheduling point (`[preempt]`):
//!   `Preempted`, and the same call asked again resumes it (`lines.rs`
//!   reads answers and parks, `rendezvous.rs` hears and resumes).
//!
//! The wall clock appears here only as that limit: it decides nothing in a
//! run whose store answers.

use std::cell::RefCell;
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::rc::Rc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::fork::client::ForkServer;
use super::fork::{Ended, ForkError};
use super::gate::Gated;
use super::lines::{Lines, ReadError};
use super::protocol::{self, Answer, ErrorKind};
use super::rendezvous::Rendezvous;
use crate::interrupt::{self, GroupGuard};
use crate::store::StoreError;

/// What one run's adapter processes said and did, shared by all of them.
#[derive(Debug, Default)]
pub struct RunLog {
    /// Where each process's stderr file goes.
    pub dir: PathBuf,
    /// The run's directory as it appears in requests, replaced by `$RUN` in
    /// the transcript so that two runs of one seed compare equal.
    pub run_dir: String,
    /// Every request and its answer, in order.
    pub transcript: Vec<Exchange>,
    /// Every process started, in order.
    pub processes: Vec<ProcessRecord>,
    /// Variables every process of the run is started with (the crash VFS's).
    pub env: Vec<(String, String)>,
    /// Where a call parked inside the store's SQLite says so (`[preempt]`).
    pub rendezvous: Option<Rc<Rendezvous>>,
}

/// One request and its answer (the answer is empty if none came).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Exchange {
    pub process: String,
    pub request: String,
    pub answer: String,
}

/// A process and how it ended.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessRecord {
    pub label: String,
    pub pid: u32,
    /// `killed` (by crashsim, as every process ends), or how it died.
    pub end: Option<String>,
    /// Its stderr file: the path while the run lasts; in the report, the
    /// name of the file kept beside `processes.json` ("" if it was empty).
    pub stderr: String,
}

pub type SharedLog = Rc<RefCell<RunLog>>;

/// A failure of one call, before it becomes a `StoreError`.
pub enum CallError {
    /// The adapter answered with an error.
    Answered(protocol::ErrorAnswer),
    /// The process died or hung (a finding).
    Died(String),
    /// The adapter broke the protocol (a harness error).
    Broken(String),
    /// The call is parked inside the store's SQLite at the point named: ask
    /// it again to let it go on.
    Preempted { point: String, sql: Option<String> },
}

impl From<ForkError> for CallError {
    fn from(error: ForkError) -> CallError {
        match error {
            ForkError::Died(cause) => CallError::Died(cause),
            ForkError::Broken(message) => CallError::Broken(message),
        }
    }
}

impl CallError {
    /// The `StoreError` of an error that is not a specific answer.
    pub fn into_store_error(self) -> StoreError {
        match self {
            CallError::Answered(answer) => match answer.kind {
                ErrorKind::Busy => StoreError::Busy,
                ErrorKind::Invalid => StoreError::Invalid(answer.message),
                ErrorKind::Failed | ErrorKind::Conflict => StoreError::Failed(answer.message),
                ErrorKind::Environment => StoreError::Environment(answer.message),
                ErrorKind::Unsupported => StoreError::Broken(answer.message),
            },
            CallError::Died(cause) => StoreError::Died(cause),
            CallError::Preempted { point, sql } => StoreError::Preempted { point, sql },
            CallError::Broken(message) => StoreError::Broken(message),
        }
    }
}

/// Where a process came from, which says how it is reaped.
enum Origin {
    /// Started by crashsim (`/bin/sh -c`): crashsim's child.
    Spawned,
    /// Forked by the seed's fork server: the server's child, reaped by it.
    Forked(Rc<RefCell<ForkServer>>),
}

/// A live adapter process.
pub struct AdapterProcess {
    command: String,
    label: String,
    origin: Origin,
    /// Its pid, which is also its process group's id.
    pid: i32,
    stdin: File,
    stdout: Lines,
    next_id: u64,
    timeout: Duration,
    log: SharedLog,
    /// Set once the process is known to be gone (or killed after a hang).
    gone: bool,
    /// The process group, registered for `SIGKILL` at a second SIGINT or
    /// SIGTERM from spawn until this kills it.
    group: Option<GroupGuard>,
    /// The call parked inside the store's SQLite, if one is.
    parked: Option<Parked>,
}

/// A request whose process parked before it answered.
struct Parked {
    id: u64,
    op: String,
    fields: Map<String, Value>,
    line: String,
    ticket: u64,
}

impl AdapterProcess {
    /// Starts `command` as process `label`; its stderr goes to a file of
    /// that name in the log's folder.
    pub fn spawn(command: &str, label: &str, timeout: Duration, log: &SharedLog) -> Result<AdapterProcess, CallError> {
        AdapterProcess::spawn_with(command, label, timeout, log, true)
    }

    /// `spawn`, without the variables of crashsim's VFS: a process whose
    /// files are no file of the run (copies of them, `System::peek`).
    pub fn spawn_without_vfs(
        command: &str,
        label: &str,
        timeout: Duration,
        log: &SharedLog,
    ) -> Result<AdapterProcess, CallError> {
        AdapterProcess::spawn_with(command, label, timeout, log, false)
    }

    fn spawn_with(
        command: &str,
        label: &str,
        timeout: Duration,
        log: &SharedLog,
        vfs: bool,
    ) -> Result<AdapterProcess, CallError> {
        interrupt::become_subreaper();
        let stderr = stderr_file(log, label)?;
        let cannot =
            |error: std::io::Error| CallError::Broken(format!("cannot start the adapter `{command}`: {error}"));
        let mut gated = Gated::shell(command).map_err(cannot)?;
        gated
            .command()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .env("CRASHSIM_ADAPTER_PROTOCOL", protocol::VERSION.to_string())
            .envs(log.borrow().env.iter().filter(|_| vfs).map(|(key, value)| (key, value)));
        let (mut child, group) = gated.spawn().map_err(cannot)?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(CallError::Broken(format!("the adapter `{command}` has no pipes")));
        };
        let pid = child.id() as i32;
        let (stdin, stdout) = (File::from(OwnedFd::from(stdin)), File::from(OwnedFd::from(stdout)));
        Ok(AdapterProcess::new(
            command,
            label,
            (Origin::Spawned, pid, group),
            (stdin, stdout),
            timeout,
            log,
        ))
    }

    /// Asks the seed's fork server for process `label`, which then behaves
    /// as one `spawn` started: its stderr goes to a file of that name in the
    /// log's folder.
    pub fn fork(
        server: &Rc<RefCell<ForkServer>>,
        command: &str,
        label: &str,
        timeout: Duration,
        log: &SharedLog,
    ) -> Result<AdapterProcess, CallError> {
        let forked = server.borrow_mut().fork(label, stderr_file(log, label)?)?;
        let origin = Origin::Forked(Rc::clone(server));
        // The fork server is guarded already, and kills its children when
        // crashsim is gone (they die with it too).
        let group = interrupt::guard_group(forked.pid);
        let pipes = (forked.requests, forked.answers);
        Ok(AdapterProcess::new(
            command,
            label,
            (origin, forked.pid, group),
            pipes,
            timeout,
            log,
        ))
    }

    /// The one place both origins meet: the process recorded in the log
    /// and guarded from an interrupt until it is killed.
    fn new(
        command: &str,
        label: &str,
        (origin, pid, group): (Origin, i32, GroupGuard),
        (stdin, stdout): (File, File),
        timeout: Duration,
        log: &SharedLog,
    ) -> AdapterProcess {
        let stderr = stderr_path(log, label).display().to_string();
        log.borrow_mut().processes.push(ProcessRecord {
            label: label.to_string(),
            pid: pid as u32,
            end: None,
            stderr,
        });
        AdapterProcess {
            command: command.to_string(),
            label: label.to_string(),
            origin,
            pid,
            stdin,
            stdout: Lines::new(stdout),
            next_id: 0,
            timeout,
            log: Rc::clone(log),
            gone: false,
            group: Some(group),
            parked: None,
        }
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// Sends one request and waits for its answer: the `ok` value.
    pub fn call(&mut self, op: &str, tick: u64, fields: Map<String, Value>) -> Result<Value, CallError> {
        if self.gone {
            return Err(CallError::Died(format!("{}: the store process is gone", self.label)));
        }
        let rendezvous = self.log.borrow().rendezvous.clone();
        let (id, line, answer) = match self.parked.take() {
            Some(parked) => {
                // The same call asked again: the parked process goes on.
                if parked.op != op || parked.fields != fields {
                    return Err(CallError::Broken(format!(
                        "crashsim asked `{op}` of {} while its `{}` was suspended: a crashsim bug \
                         (a suspended call is asked again with the same arguments)",
                        self.label, parked.op
                    )));
                }
                if let Some(rendezvous) = &rendezvous {
                    rendezvous.resume(parked.ticket);
                }
                let answer = self.stdout.read_line(self.timeout, rendezvous.as_deref());
                (parked.id, parked.line, (answer, parked.fields))
            }
            None => {
                let id = self.next_id;
                self.next_id += 1;
                let line = protocol::request_line(id, op, tick, fields.clone());
                let written = self.stdin.write_all(line.as_bytes()).and_then(|()| self.stdin.flush());
                // A process that is gone may still have left its last words in the
                // pipe: read them even when the request could not be written.
                let answer = match written {
                    Ok(()) => self.stdout.read_line(self.timeout, rendezvous.as_deref()),
                    Err(_) => self.stdout.read_line(Duration::from_millis(100), None),
                };
                (id, line, (answer, fields))
            }
        };
        let (answer, fields) = answer;
        let answer = match answer {
            Ok(answer) => answer,
            Err(ReadError::Parked(ticket, at)) => {
                let point = at.describe();
                let sql = rendezvous.as_deref().and_then(Rendezvous::running_statement);
                self.parked = Some(Parked {
                    id,
                    op: op.to_string(),
                    fields,
                    line,
                    ticket,
                });
                return Err(CallError::Preempted { point, sql });
            }
            Err(ReadError::Eof) => {
                self.record(op, &line, "");
                return Err(CallError::Died(self.died(op)));
            }
            Err(ReadError::Timeout) => {
                self.record(op, &line, "");
                self.kill();
                return Err(CallError::Died(format!(
                    "{}: the store process did not answer `{op}` within {} s of wall-clock time and was killed",
                    self.label,
                    self.timeout.as_secs_f64()
                )));
            }
            Err(ReadError::Io(error)) => {
                return Err(CallError::Broken(format!("reading from {}: {error}", self.label)));
            }
        };
        self.record(op, &line, &answer);
        let parsed: Answer = serde_json::from_str(&answer).map_err(|error| {
            CallError::Broken(format!(
                "the adapter `{}` ({}) answered request {id} (`{op}`) with a line that is not a protocol \
                 answer ({error}): {:?}{}",
                self.command,
                self.label,
                shorten(&answer),
                if answer.trim_start().starts_with('{') {
                    ""
                } else {
                    " (stdout is the protocol's channel: log to stderr)"
                }
            ))
        })?;
        if parsed.id != id {
            return Err(CallError::Broken(format!(
                "the adapter `{}` ({}) answered request {} when request {id} (`{op}`) was asked: {:?}",
                self.command,
                self.label,
                parsed.id,
                shorten(&answer)
            )));
        }
        match (parsed.ok, parsed.error) {
            (Some(ok), None) => Ok(ok),
            (None, Some(error)) if error.kind == ErrorKind::Unsupported => Err(CallError::Broken(format!(
                "the adapter `{}` ({}) does not support `{op}`: {}",
                self.command, self.label, error.message
            ))),
            (None, Some(error)) => Err(CallError::Answered(error)),
            _ => Err(CallError::Broken(format!(
                "the adapter `{}` ({}) answered request {id} (`{op}`) with neither `ok` nor `error` (or both): {:?}",
                self.command,
                self.label,
                shorten(&answer)
            ))),
        }
    }

    /// Adds an exchange to the transcript. Only a hello names the run's
    /// folder, which is written `$RUN` so that runs compare equal.
    fn record(&self, op: &str, request: &str, answer: &str) {
        let mut log = self.log.borrow_mut();
        let request = if op == "hello" && !log.run_dir.is_empty() {
            request.trim_end().replace(&log.run_dir, "$RUN")
        } else {
            request.trim_end().to_string()
        };
        log.transcript.push(Exchange {
            process: self.label.clone(),
            request,
            answer: answer.trim_end().to_string(),
        });
    }

    /// Why the process is gone, once it is: its exit status or signal.
    fn died(&mut self, op: &str) -> String {
        let status = self.end_group();
        let status = status.map_or_else(|| "status unknown".to_string(), Ended::describe);
        self.set_end(&status);
        format!(
            "{}: the store process exited unasked during `{op}` ({status})",
            self.label
        )
    }

    /// Kills whatever is left of the process group and reaps all of it: when
    /// this returns, no process of the group holds a file or a lock (a shell
    /// between crashsim and the adapter included). How the leader ended.
    fn end_group(&mut self) -> Option<Ended> {
        if self.gone {
            return None;
        }
        self.gone = true;
        let group = self.pid as libc::pid_t;
        // SAFETY: killpg only sends a signal; the group is the process's own
        // (`process_group(0)`, or `setpgid` on both sides of a fork), and its
        // id stays reserved until the leader is reaped below.
        unsafe {
            libc::killpg(group, libc::SIGKILL);
        }
        // Killed: a second signal has nothing left to do here, and must not
        // signal the group's id once the leader is reaped and it is free.
        self.group = None;
        if let Origin::Forked(server) = &self.origin
            && let Some(ended) = server.borrow_mut().reap(group)
        {
            return Some(ended);
        }
        // Started by crashsim, or orphaned by a fork server that is gone
        // (crashsim, the subreaper, inherits the group): reap it here.
        let mut leader = None;
        loop {
            let mut status: libc::c_int = 0;
            // SAFETY: waits for a child in the group; `status` is valid.
            let pid = unsafe { libc::waitpid(-group, &mut status, 0) };
            if pid == group {
                leader = Ended::from_status(status);
            } else if pid < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                // ECHILD: every process of the group is reaped.
                break;
            }
        }
        leader
    }

    fn set_end(&self, end: &str) {
        let mut log = self.log.borrow_mut();
        if let Some(record) = log.processes.iter_mut().rev().find(|record| record.label == self.label) {
            record.end.get_or_insert_with(|| end.to_string());
        }
    }

    /// `SIGKILL` to the whole process group, then wait: the process (and
    /// anything it started) is gone when this returns.
    pub fn kill(&mut self) {
        if self.parked.take().is_some()
            && let Some(rendezvous) = &self.log.borrow().rendezvous
        {
            rendezvous.killed_parked();
        }
        if !self.gone {
            self.end_group();
            self.set_end("killed");
        }
    }
}

impl Drop for AdapterProcess {
    /// Every process ends killed: a kill at a kill point, or the end of the
    /// run. An adapter never gets to clean up, and must not need to.
    fn drop(&mut self) {
        self.kill();
    }
}

/// Where process `label`'s stderr goes: a file of that name in the log's folder.
fn stderr_path(log: &SharedLog, label: &str) -> PathBuf {
    log.borrow().dir.join(format!("{label}.stderr"))
}

/// Creates process `label`'s stderr file.
fn stderr_file(log: &SharedLog, label: &str) -> Result<File, CallError> {
    let path = stderr_path(log, label);
    File::create(&path).map_err(|error| CallError::Broken(format!("creating {}: {error}", path.display())))
}

/// The first 300 characters of an offending line.
fn shorten(line: &str) -> String {
    let line = line.trim_end();
    match line.char_indices().nth(300) {
        Some((index, _)) => format!("{}…", &line[..index]),
        None => line.to_string(),
    }
}

/// The folder of a run's adapter files: `adapter/` beside the databases.
pub fn log_dir(store_path: &Path) -> PathBuf {
    store_path.parent().unwrap_or(Path::new(".")).join("adapter")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_group_is_guarded_from_spawn_until_killed() {
        let dir = tempfile::tempdir().unwrap();
        let log: SharedLog = Rc::new(RefCell::new(RunLog {
            dir: dir.path().to_path_buf(),
            ..RunLog::default()
        }));
        let mut process = AdapterProcess::spawn("sleep 1000", "p0", Duration::from_secs(60), &log)
            .unwrap_or_else(|_| panic!("sleep starts"));
        let group = process.pid;
        assert!(interrupt::guarded_groups().contains(&group));
        process.kill();
        assert!(!interrupt::guarded_groups().contains(&group));
        assert_eq!(log.borrow().processes[0].end.as_deref(), Some("killed"));
    }
}
