//! D1: the same scenario and seed give the same run. crashsim decides every
//! step, so when two runs of one seed differ, something under test answered
//! differently: a random id, a wall-clock time, rows without `ORDER BY`.
//!
//! `compare` names the first such answer: from an outside store's
//! transcripts (every request and answer of every process, in order) when
//! there are any, else from the traces.

use crate::adapter::Exchange;
use crate::check::{Invariant, Violation};
use crate::runner::SeedResult;
use crate::trace::render;

/// The artifact that holds an adapter run's transcript.
const TRANSCRIPT: &str = "adapter/transcript.jsonl";

/// The D1 violation of two runs of one seed, if they differ.
pub fn compare(first: &SeedResult, second: &SeedResult) -> Option<Violation> {
    if first.trace_hash == second.trace_hash {
        return None;
    }
    let found = match (transcript(first), transcript(second)) {
        (Some(one), Some(two)) => first_difference(&one, &two),
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
    Some(Violation::new(Invariant::D1, message))
}

fn transcript(result: &SeedResult) -> Option<Vec<Exchange>> {
    let artifact = result.artifacts.iter().find(|artifact| artifact.name == TRANSCRIPT)?;
    let text = String::from_utf8_lossy(&artifact.content);
    text.lines().map(|line| serde_json::from_str(line).ok()).collect()
}

/// The first exchange whose answer (or, failing that, request) differs.
fn first_difference(one: &[Exchange], two: &[Exchange]) -> Option<String> {
    for (index, (a, b)) in one.iter().zip(two).enumerate() {
        if a.request != b.request || a.process != b.process {
            return Some(format!(
                "request #{index} differed ({} sent {} the first time, {} sent {} the second), after identical \
                 answers: crashsim itself is not deterministic here",
                a.process, a.request, b.process, b.request
            ));
        }
        if a.answer != b.answer {
            return Some(format!(
                "the first answer that differed is to request #{index} of the run, {} of process {}: \
                 {} the first time, {} the second",
                a.request, a.process, a.answer, b.answer
            ));
        }
    }
    (one.len() != two.len()).then(|| {
        format!(
            "the runs made {} and {} requests, identical as far as both went",
            one.len(),
            two.len()
        )
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
