//! D1: the same scenario and seed give the same run. crashsim decides every
//! step, so when two runs of one seed differ, something under test answered
//! differently: a random id, a wall-clock time, rows without `ORDER BY`.
//!
//! `compare` names the first such answer: from an outside store's
//! transcripts (every request and answer of every process, in order) when
//! there are any, else from the traces. Where the transcripts show crashsim
//! itself asking differently after identical answers, the difference is
//! crashsim's own: an error, never a finding against the store.

use super::result::SeedResult;
use crate::adapter::{Exchange, TRANSCRIPT};
use crate::check::{Invariant, Violation};
use crate::trace::render;

/// crashsim asked differently in two runs of one seed whose answers were
/// the same: its own bug.
#[derive(Debug, thiserror::Error)]
#[error("crashsim is not deterministic on seed {seed}: {found}")]
pub struct OwnNondeterminism {
    pub seed: u64,
    pub found: String,
}

/// `first` with the D1 violation of its two runs added, if they differ.
pub fn judge(mut first: SeedResult, second: &SeedResult) -> Result<SeedResult, OwnNondeterminism> {
    if let Some(violation) = compare(&first, second)? {
        first.violations.push(violation);
        first.ok = false;
    }
    Ok(first)
}

/// The D1 violation of two runs of one seed, if they differ.
pub fn compare(first: &SeedResult, second: &SeedResult) -> Result<Option<Violation>, OwnNondeterminism> {
    if first.trace_hash == second.trace_hash {
        return Ok(None);
    }
    let found = match (transcript(first), transcript(second)) {
        (Some(one), Some(two)) => match first_difference(&one, &two) {
            Some(Difference::Request(found)) => {
                return Err(OwnNondeterminism {
                    seed: first.seed,
                    found,
                });
            }
            Some(Difference::Answer(found)) => Some(found),
            None => None,
        },
        _ => None,
    };
    let found = found.or_else(|| first_trace_difference(first, second));
    let message = format!(
        "two runs of seed {} gave trace hashes {} and {}: {}",
        first.seed,
        first.trace_hash,
        second.trace_hash,
        found.unwrap_or_else(|| "the difference was not found in what the runs kept".to_string())
    );
    Ok(Some(Violation::new(Invariant::D1, message)))
}

/// Where two transcripts part.
enum Difference {
    /// crashsim sent another request after identical answers.
    Request(String),
    /// The store answered the same request differently.
    Answer(String),
}

fn transcript(result: &SeedResult) -> Option<Vec<Exchange>> {
    let artifact = result.artifacts.iter().find(|artifact| artifact.name == TRANSCRIPT)?;
    let content = artifact.content();
    let text = String::from_utf8_lossy(&content);
    text.lines().map(|line| serde_json::from_str(line).ok()).collect()
}

/// The first exchange whose request or answer differs.
fn first_difference(one: &[Exchange], two: &[Exchange]) -> Option<Difference> {
    for (index, (a, b)) in one.iter().zip(two).enumerate() {
        if a.request != b.request || a.process != b.process {
            return Some(Difference::Request(format!(
                "request #{index} differed ({} sent {} the first time, {} sent {} the second) after \
                 identical answers",
                a.process, a.request, b.process, b.request
            )));
        }
        if a.answer != b.answer {
            return Some(Difference::Answer(format!(
                "the first answer that differed is to request #{index} of the run, {} of process {}: \
                 {} the first time, {} the second",
                a.request, a.process, a.answer, b.answer
            )));
        }
    }
    (one.len() != two.len()).then(|| {
        Difference::Request(format!(
            "the runs made {} and {} requests, identical as far as both went",
            one.len(),
            two.len()
        ))
    })
}

/// The first trace line that differs.
fn first_trace_difference(first: &SeedResult, second: &SeedResult) -> Option<String> {
    let (one, two) = (first.events.as_deref()?, second.events.as_deref()?);
    let index = one
        .iter()
        .zip(two)
        .position(|(a, b)| a != b)
        .unwrap_or(one.len().min(two.len()));
    let line = |events: &[crate::trace::TraceEvent]| {
        events
            .get(index)
            .map(render::line)
            .unwrap_or_else(|| "(the trace ended)".to_string())
    };
    Some(format!(
        "the first trace line that differs is #{index}: `{}` the first time, `{}` the second",
        line(one),
        line(two)
    ))
}
