//! A1: an outside store's process dies only when crashsim kills it, and
//! answers every request within the wall-clock limit. A process that exits
//! on its own (an unhandled exception, a crash) or hangs is a bug of the
//! store, reported with the tail of what it wrote to stderr.

use std::collections::BTreeMap;

use super::{Input, Invariant, Violation};
use crate::actors::ActorId;
use crate::trace::Op;

/// Lines of a dead process's stderr quoted in its violation.
const STDERR_LINES: usize = 12;

pub fn check(input: &Input<'_>) -> Vec<Violation> {
    // Each actor's life, to name the process that died: `writer-3.1`.
    let mut lives: BTreeMap<ActorId, u32> = BTreeMap::new();
    let mut violations = Vec::new();
    for event in input.events {
        match &event.op {
            Op::Open { incarnation, .. } | Op::Restart { incarnation } => {
                lives.insert(event.actor, *incarnation);
            }
            Op::Died { step, cause } => {
                let life = lives.get(&event.actor).copied().unwrap_or_default();
                let mut message = match event.actor == ActorId::SIM {
                    true => format!("the process of {step} died unasked: {cause}"),
                    false => format!("{} died at its `{step}` step: {cause}", event.actor),
                };
                let name = format!("adapter/{}.{life}.stderr", event.actor);
                if let Some(artifact) = input.artifacts.iter().find(|artifact| artifact.name == name) {
                    let content = artifact.content();
                    let text = String::from_utf8_lossy(&content);
                    message.push_str(&format!(
                        "\nits stderr ({name} in the report) ended with:\n{}",
                        crate::adapter::tail(&text, STDERR_LINES)
                    ));
                }
                violations.push(Violation::new(Invariant::A1, message).ticks([event.tick]));
            }
            _ => {}
        }
    }
    violations
}
