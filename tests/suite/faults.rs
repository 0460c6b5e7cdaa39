//! Faults do what the scenario says: scripted kills land on the named actors
//! at their tick, a point at rate 1/1 fires every time it is reached while
//! faults are on, and none fires in the quiet phase.

use crate::common;

use std::path::PathBuf;

use common::{run, work_dir};
use crashsim::actors::Role;
use crashsim::faults::KillPoint;
use crashsim::scenario::{Loaded, parse};
use crashsim::trace::Op;

fn scenario(name: &str, text: &str) -> Loaded {
    let path = PathBuf::from(format!("{name}.toml"));
    Loaded {
        name: name.to_string(),
        scenario: parse(text, &path).expect("valid scenario"),
        path,
        mutant: None,
        sut: None,
        source: crashsim::scenario::Source::File,
    }
}

#[test]
fn scripted_kills_hit_the_named_actors_at_their_tick() {
    let loaded = scenario(
        "scripted",
        r#"
        [run]
        ticks_fault = 1000
        [workload]
        trips_count = 10
        writers_count = 3
        workers_count = 2
        receivers_count = 2
        [[script]]
        tick = 300
        kill = "all"
        [[script]]
        tick = 700
        kill = "worker-1"
        "#,
    );
    let dir = work_dir();
    let result = run(&loaded, 1, dir.path());
    assert!(result.ok, "{:#?}", result.violations);
    let kills: Vec<(u64, String)> = result
        .events
        .unwrap()
        .into_iter()
        .filter(|event| matches!(&event.op, Op::Kill { point } if point == "script"))
        .map(|event| (event.tick, event.actor.to_string()))
        .collect();
    let at_300: Vec<&str> = kills
        .iter()
        .filter(|(tick, _)| *tick == 300)
        .map(|(_, a)| a.as_str())
        .collect();
    assert_eq!(at_300.len(), 7, "every actor killed at 300: {kills:?}");
    assert!(kills.contains(&(700, "worker-1".to_string())), "{kills:?}");
    assert_eq!(kills.len(), 8, "{kills:?}");
}

#[test]
fn a_certain_kill_fires_whenever_reached_and_never_when_quiet() {
    let loaded = scenario(
        "certain",
        r#"
        [run]
        ticks_fault = 1500
        [workload]
        trips_count = 10
        writers_count = 2
        workers_count = 2
        receivers_count = 1
        [faults.writer]
        after_commit = "1/1"
        "#,
    );
    let dir = work_dir();
    let result = run(&loaded, 4, dir.path());
    assert!(result.ok, "{:#?}", result.violations);
    let point = KillPoint::WriterAfterCommit.index();
    assert!(result.kills.fired[point] > 0);
    let events = result.events.unwrap();
    let quiet_tick = events
        .iter()
        .find(|event| matches!(event.op, Op::Quiet))
        .map(|event| event.tick)
        .expect("the run reached the quiet phase");
    let commits_before = events
        .iter()
        .filter(|event| event.tick < quiet_tick && event.actor.role == Role::Writer)
        .filter(|event| matches!(&event.op, Op::Commit { .. }))
        .count() as u64;
    assert_eq!(
        result.kills.fired[point], commits_before,
        "every commit in the fault phase was followed by a kill"
    );
    let late_kills = events
        .iter()
        .filter(|event| event.tick > quiet_tick && matches!(event.op, Op::Kill { .. }))
        .count();
    assert_eq!(late_kills, 0, "no kill in the quiet phase");
}
