//! The child side: `crashsim __actor`, one actor over its own connection,
//! stepping when the parent says so and aborting when the parent says die.

use std::io::{BufReader, Stdin, Stdout};
use std::path::Path;

use super::protocol::{FromChild, Init, ToChild, receive, send};
use crate::actors::{Actor, ActorId};
use crate::sim::ctx::{Ctx, Gate, World};
use crate::sim::faults::KillPoint;
use crate::sim::net::{Address, Message};
use crate::sim::prng::Prng;
use crate::store::{StoreError, SystemConfig};
use crate::trace::Recorder;

struct Channel {
    input: BufReader<Stdin>,
    output: Stdout,
}

/// Asks the parent at every kill point, after flushing what the step did so far.
struct RemoteGate<'a> {
    channel: &'a mut Channel,
}

impl Gate for RemoteGate<'_> {
    fn decide(
        &mut self,
        _now: u64,
        _actor: ActorId,
        point: KillPoint,
        trace: &mut Recorder,
        outgoing: &mut Vec<(Address, Message)>,
    ) -> bool {
        let reach = FromChild::Reach {
            point,
            events: std::mem::take(trace).into_events(),
            outgoing: std::mem::take(outgoing),
        };
        let answer = send(&mut self.channel.output, &reach).and_then(|()| receive(&mut self.channel.input));
        match answer {
            Ok(Some(ToChild::Fire { fire: true })) | Ok(None) | Err(_) => {
                // Death as a process dies: no destructors, no rollback, no
                // checkpoint on close. The kernel frees the locks.
                std::process::abort()
            }
            Ok(Some(_)) => false,
        }
    }
}

/// Runs the child until the parent closes its stdin (or kills it).
pub fn main() -> std::process::ExitCode {
    no_core_files();
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("crashsim actor: {error}");
            std::process::ExitCode::from(3)
        }
    }
}

/// Deliberate aborts must not fill the disk with core files.
fn no_core_files() {
    let none = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit reads a valid rlimit for this process only; on
    // failure nothing changes, which is harmless.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &none);
    }
}

fn run() -> std::io::Result<()> {
    let mut channel = Channel {
        input: BufReader::new(std::io::stdin()),
        output: std::io::stdout(),
    };
    let result = serve(&mut channel);
    if let Err(error) = &result {
        // Tell the parent why, so the run stops with the reason.
        let _ = send(
            &mut channel.output,
            &FromChild::Error {
                message: error.to_string(),
            },
        );
    }
    result
}

fn serve(channel: &mut Channel) -> std::io::Result<()> {
    let Some(init): Option<Init> = receive(&mut channel.input)? else {
        return Ok(());
    };
    let scenario = crate::scenario::parse(&init.scenario, Path::new("<parent>")).map_err(std::io::Error::other)?;
    let implementation =
        crate::mutants::resolve(&scenario.store).ok_or_else(|| std::io::Error::other("unknown implementation"))?;
    let config = SystemConfig {
        store_path: init.store_path.clone(),
        receiver_path: init.receiver_path.clone(),
        store_sqlite: scenario.sqlite.store_settings(),
        receiver_sqlite: scenario.sqlite.receiver_settings(),
        hotel_failure: scenario.workload.hotel_failure,
    };
    let opened = implementation
        .system(&config)
        .and_then(|mut system| Actor::open(init.actor.role, &mut *system));
    let mut actor = match opened {
        Ok(actor) => actor,
        Err(error) => {
            let busy = matches!(error, StoreError::Busy);
            let failed = FromChild::OpenFailed {
                busy,
                error: error.to_string(),
            };
            return send(&mut channel.output, &failed);
        }
    };
    let synchronous = actor.connection().and_then(|conn| {
        conn.pragma_query_value(None, "synchronous", |row| row.get::<_, u8>(0))
            .ok()
    });
    send(&mut channel.output, &FromChild::Opened { synchronous })?;
    let world = World::new(&scenario, init.seed, implementation.engine());
    let mut prng = Prng::derive(init.seed, &format!("{}/decide", init.actor));
    while let Some(request) = receive::<ToChild>(&mut channel.input)? {
        match request {
            ToChild::Step {
                now,
                incarnation,
                prng: position,
            } => {
                let position = position.parse().map_err(std::io::Error::other)?;
                prng.seek(position);
                let mut trace = Recorder::new();
                let mut outgoing = Vec::new();
                let next = {
                    let mut gate = RemoteGate { channel };
                    let mut ctx = Ctx {
                        now,
                        me: init.actor,
                        incarnation,
                        prng: &mut prng,
                        world: &world,
                        kill: &mut gate,
                        trace: &mut trace,
                        outgoing: &mut outgoing,
                    };
                    actor.step(&mut ctx)
                };
                let done = FromChild::Done {
                    next,
                    prng: prng.position().to_string(),
                    events: trace.into_events(),
                    outgoing,
                };
                send(&mut channel.output, &done)?;
            }
            ToChild::Deliver { message } => actor.deliver(message),
            ToChild::Idle => send(&mut channel.output, &FromChild::Idle { idle: actor.is_idle() })?,
            ToChild::Fire { .. } => {}
        }
    }
    Ok(())
}
