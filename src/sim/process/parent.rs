//! The parent side: a child process that holds one actor, driven one step at
//! a time.

use std::io::BufReader;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::protocol::{FromChild, Init, ToChild, receive, send};
use crate::actors::Next;
use crate::sim::ctx::KillGate;
use crate::sim::net::{Address, Message};
use crate::sim::prng::Prng;
use crate::trace::Recorder;

/// A live child and its pipes.
pub struct ChildActor {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

/// Whose step it is, and when.
#[derive(Clone, Copy)]
pub struct Turn {
    pub now: u64,
    pub incarnation: u32,
    pub actor: crate::actors::ActorId,
}

/// How a spawn went.
pub enum Spawned {
    Up(ChildActor, Option<u8>),
    Busy,
    Failed(String),
}

fn broken(what: &str) -> std::io::Error {
    std::io::Error::other(format!("the actor process {what}"))
}

/// An error that is crashsim's own (a protocol breach), marked so the
/// simulator stops the run instead of restarting the child forever.
fn fatal(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

/// Whether an error from `step` is crashsim's own (see `fatal`).
pub fn is_fatal(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::InvalidData
}

impl ChildActor {
    /// Starts `exe __actor` and has it open its connection.
    pub fn spawn(exe: &Path, init: &Init) -> std::io::Result<Spawned> {
        let mut child = Command::new(exe)
            .arg("__actor")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let input = child.stdin.take().ok_or_else(|| broken("has no stdin"))?;
        let output = BufReader::new(child.stdout.take().ok_or_else(|| broken("has no stdout"))?);
        let mut actor = ChildActor { child, input, output };
        send(&mut actor.input, init)?;
        Ok(match receive::<FromChild>(&mut actor.output)? {
            Some(FromChild::Opened { synchronous }) => Spawned::Up(actor, synchronous),
            Some(FromChild::OpenFailed { busy: true, .. }) => {
                actor.reap();
                Spawned::Busy
            }
            Some(FromChild::OpenFailed { error, .. }) => {
                actor.reap();
                Spawned::Failed(error)
            }
            Some(FromChild::Error { message }) => {
                actor.reap();
                return Err(fatal(message));
            }
            _ => {
                actor.reap();
                Spawned::Failed("the actor process did not start".to_string())
            }
        })
    }

    /// One step. Kill points are decided by `gate` here, in the parent; on a
    /// kill the child aborts and this waits for it to be gone.
    pub(crate) fn step(
        &mut self,
        turn: Turn,
        prng: &mut Prng,
        gate: &mut KillGate<'_>,
        trace: &mut Recorder,
        outgoing: &mut Vec<(Address, Message)>,
    ) -> std::io::Result<Next> {
        let Turn {
            now,
            incarnation,
            actor,
        } = turn;
        let step = ToChild::Step {
            now,
            incarnation,
            prng: prng.position().to_string(),
        };
        send(&mut self.input, &step)?;
        loop {
            match receive::<FromChild>(&mut self.output)?.ok_or_else(|| broken("died during a step"))? {
                FromChild::Reach {
                    point,
                    events,
                    outgoing: sent,
                } => {
                    append(trace, events);
                    outgoing.extend(sent);
                    let fire = gate.reach(now, actor, point);
                    // Ignore a failed write: a child that must die may be gone already.
                    let _ = send(&mut self.input, &ToChild::Fire { fire });
                    if fire {
                        self.reap();
                        return Ok(Next::Killed(point));
                    }
                }
                FromChild::Done {
                    next,
                    prng: position,
                    events,
                    outgoing: sent,
                } => {
                    prng.seek(position.parse().map_err(std::io::Error::other)?);
                    append(trace, events);
                    outgoing.extend(sent);
                    return Ok(next);
                }
                FromChild::Error { message } => return Err(fatal(message)),
                _ => return Err(fatal("the actor process answered out of turn".to_string())),
            }
        }
    }

    pub fn deliver(&mut self, message: Message) -> std::io::Result<()> {
        send(&mut self.input, &ToChild::Deliver { message })
    }

    pub fn is_idle(&mut self) -> std::io::Result<bool> {
        send(&mut self.input, &ToChild::Idle)?;
        match receive::<FromChild>(&mut self.output)? {
            Some(FromChild::Idle { idle }) => Ok(idle),
            _ => Err(broken("did not say whether it is idle")),
        }
    }

    /// Waits for the child to be gone (after an abort, or after `kill`).
    fn reap(&mut self) {
        let _ = self.child.wait();
    }

    /// A death the parent decides (a scripted kill, a crash): SIGKILL, then wait.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        self.reap();
    }
}

impl Drop for ChildActor {
    fn drop(&mut self) {
        // Never leave a child behind: kill and reap (a no-op if it is gone).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn append(trace: &mut Recorder, events: Vec<crate::trace::TraceEvent>) {
    for event in events {
        trace.record(event.tick, event.actor, event.op);
    }
}
