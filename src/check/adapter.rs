//! A1: an outside store's process dies only when crashsim kills it, and
//! answers every request within the wall-clock limit. A process that exits
//! on its own (an unhandled exception, a crash) or hangs is a bug of the
//! store, reported with the tail of what it wrote to stderr.

use super::{Input, Invariant, Violation};
use crate::store::Artifact;
use crate::trace::Op;

/// Lines of a dead process's stderr quoted in its violation.
const STDERR_LINES: usize = 12;

pub fn check(input: &Input<'_>) -> Vec<Violation> {
    input
        .events
        .iter()
        .filter_map(|event| match &event.op {
            Op::Died { step, cause } => Some(
                Violation::new(
                    Invariant::A1,
                    format!("{} died at its `{step}` step: {cause}", event.actor),
                )
                .ticks([event.tick]),
            ),
            _ => None,
        })
        .collect()
}

/// Appends to each A1 violation the tail of its process's stderr, which
/// the run kept as an artifact (`adapter/<process>.stderr`). The process is
/// named at the start of the cause (`writer-3.1: …`).
pub fn attach_stderr(violations: &mut [Violation], artifacts: &[Artifact]) {
    for violation in violations.iter_mut().filter(|v| v.invariant == Invariant::A1) {
        let Some(label) = violation.message.split(": ").nth(1).map(|rest| rest.trim().to_string()) else {
            continue;
        };
        let name = format!("adapter/{label}.stderr");
        if let Some(artifact) = artifacts.iter().find(|artifact| artifact.name == name) {
            let text = String::from_utf8_lossy(&artifact.content);
            violation.message.push_str(&format!(
                "\nits stderr ({name} in the report) ended with:\n{}",
                crate::adapter::tail(&text, STDERR_LINES)
            ));
        }
    }
}
