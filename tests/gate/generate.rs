//! Scenario files for the gate's property test: valid-looking TOML over the
//! whole format, every key optional, values mostly small (a run must take a
//! fraction of a second) with occasional large and extreme ones.
//!
//! Budgets are where false alarms hide, so `run.ticks_max`, `run.steps_max`
//! and `run.quiet_ticks_min` are often drawn just above or below what the
//! loader's own rules ask for (`Budget`), to probe the edge of the gate.
//!
//! Clock skew (`[faults.skew]`, sometimes beyond a lease margin), retry
//! timers (`[retries]` with the retryable faults they need) and de-dup
//! retention (`[receivers]`, drawn near the retry horizon the loader
//! derives) are drawn too; the retryable faults come almost only with
//! `[retries]`, which they need, so that few cases are rejected for that.
//!
//! One constraint keeps true alarms out: with power loss through a disk
//! model that can lose writes, both databases run `synchronous` FULL or
//! EXTRA. Weaker settings lose acknowledged commits by design (that is
//! `scenarios/demonstrations/ghost_effect.toml`), a finding, not a false alarm.

use std::collections::BTreeMap;

use crashsim::scenario::{Budget, Scenario};
use proptest::prelude::*;
use toml::Value;

/// The implementations that must pass every accepted scenario.
pub const STORES: [&str; 2] = ["reference", "group_commit"];

/// Every key of the format; `script[…]` entries are checked by prefix.
pub const KEYS: &[&str] = &[
    "description",
    "store",
    "seed",
    "run.ticks_fault",
    "run.ticks_max",
    "run.steps_max",
    "run.settle_check_ticks",
    "run.quiet_ticks_min",
    "workload.trips_count",
    "workload.writers_count",
    "workload.workers_count",
    "workload.receivers_count",
    "workload.hotel_failure",
    "workload.pending_batch",
    "workload.ids",
    "workload.payloads",
    "timing.step_ticks_max",
    "timing.poll_ticks",
    "timing.latency_ticks_max",
    "timing.reply_timeout_ticks",
    "timing.restart_ticks_min",
    "timing.restart_ticks_max",
    "timing.busy_backoff_ticks_max",
    "sqlite.journal_mode",
    "sqlite.synchronous",
    "sqlite.receiver_synchronous",
    "power.loss",
    "power.model",
    "faults.swarm",
    "faults.key_conflict",
    "faults.near_miss_key",
    "faults.writer.before_commit",
    "faults.writer.after_commit",
    "faults.worker.after_read_pending",
    "faults.worker.before_deliver",
    "faults.worker.after_deliver",
    "faults.worker.before_mark_done",
    "faults.worker.after_mark_done",
    "faults.receiver.before_effect_commit",
    "faults.receiver.after_effect_commit",
    "faults.net.drop",
    "faults.net.duplicate",
    "faults.net.retryable",
    "faults.receiver.retryable",
    "faults.receiver.poison",
    "faults.skew",
    "faults.skew.max_ticks",
    "faults.skew.step_rate",
    "retries",
    "retries.max_attempts",
    "retries.backoff_base_ticks",
    "retries.backoff_cap_ticks",
    "receivers",
    "receivers.dedup_retention_ticks",
    "leases.margin_ticks",
    "faults.pause.rate",
    "faults.pause.ticks_min",
    "faults.pause.ticks_max",
    "leases.ticks",
    "leases",
    "faults.pause",
];

/// Whether `key` is a key of the format.
pub fn is_format_key(key: &str) -> bool {
    if let Some(rest) = key.strip_prefix("script[") {
        return rest.split_once("].").is_some_and(|(index, field)| {
            index.parse::<usize>().is_ok() && ["tick", "kill", "power_cut"].contains(&field)
        });
    }
    KEYS.contains(&key)
}

/// A generated file: its TOML text.
#[derive(Clone, Debug)]
pub struct Case {
    pub text: String,
}

/// Tables in the order they are written, each an ordered list of keys.
type Draft = BTreeMap<&'static str, Vec<(&'static str, Value)>>;

fn int(value: u64) -> Value {
    Value::Integer(value.min(i64::MAX as u64) as i64)
}

/// Mostly `small`, sometimes `medium`, rarely a bound of the shape rules.
fn number(small: std::ops::RangeInclusive<u64>, medium: std::ops::RangeInclusive<u64>) -> BoxedStrategy<Value> {
    prop_oneof![
        16 => small.prop_map(int),
        4 => medium.prop_map(int),
        1 => prop::sample::select(vec![1u64, 2, 1_000, 1_000_000]).prop_map(int),
    ]
    .boxed()
}

/// A ratio: off, small rates, certain, and spellings the parser accepts.
fn ratio() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => Just("0/1".to_string()),
        6 => (1u32..=3, 2u32..=60).prop_map(|(n, d)| format!("{n}/{}", d.max(n))),
        1 => prop::sample::select(vec!["1/1", "1/2", "1/4294967295", "4294967295/4294967295", " 1 / 9 "]).prop_map(str::to_string),
    ]
    .prop_map(Value::String)
    .boxed()
}

/// Values of the right syntax that the types or the shape rules refuse, or
/// extremes they accept: one of them replaces a key's value in some cases.
fn poison() -> BoxedStrategy<Value> {
    prop_oneof![
        prop::sample::select(vec![0u64, 1_000_001, 100_000_000, 100_000_001, i64::MAX as u64]).prop_map(int),
        Just(Value::Integer(-1)),
        prop::sample::select(vec!["2/1", "1/0", "half", "", "wal", "nobody"])
            .prop_map(|text| Value::String(text.to_string())),
        Just(Value::Boolean(true)),
        Just(Value::Float(0.5)),
    ]
    .boxed()
}

/// A style of ids or payloads: plain, hostile, one class or a list of them.
fn style() -> BoxedStrategy<Value> {
    const CLASSES: [&str; 6] = ["case", "space", "unicode", "long", "punct", "markup"];
    prop_oneof![
        2 => text(&["plain", "hostile"]),
        1 => text(&CLASSES),
        1 => prop::sample::subsequence(CLASSES.to_vec(), 0..=CLASSES.len())
            .prop_map(|classes| Value::Array(classes.into_iter().map(|c| Value::String(c.to_string())).collect())),
    ]
    .boxed()
}

fn text(choices: &[&'static str]) -> BoxedStrategy<Value> {
    prop::sample::select(choices.to_vec())
        .prop_map(|choice| Value::String(choice.to_string()))
        .boxed()
}

/// `(key, value)`, written half the time.
fn maybe(key: &'static str, value: BoxedStrategy<Value>) -> BoxedStrategy<Option<(&'static str, Value)>> {
    prop::option::of(value.prop_map(move |value| (key, value))).boxed()
}

/// Like `maybe`, but written nine times in ten: sizes, whose defaults make
/// a slow case (50 trips, a 4000-tick fault phase).
fn usually(key: &'static str, value: BoxedStrategy<Value>) -> BoxedStrategy<Option<(&'static str, Value)>> {
    prop_oneof![9 => value.prop_map(move |value| Some((key, value))), 1 => Just(None)].boxed()
}

fn table(keys: Vec<BoxedStrategy<Option<(&'static str, Value)>>>) -> BoxedStrategy<Vec<(&'static str, Value)>> {
    keys.prop_map(|entries| entries.into_iter().flatten().collect()).boxed()
}

fn top() -> BoxedStrategy<Vec<(&'static str, Value)>> {
    table(vec![
        maybe("description", "[ -~é\"\\\\\n]{0,24}".prop_map(Value::String).boxed()),
        maybe("store", text(&STORES)),
        maybe(
            "seed",
            prop_oneof![
                any::<u32>().prop_map(|seed| int(u64::from(seed))),
                Just(Value::String("0x5eed".into()))
            ]
            .boxed(),
        ),
    ])
}

fn run() -> BoxedStrategy<Vec<(&'static str, Value)>> {
    table(vec![
        usually("ticks_fault", number(0..=1_500, 1_501..=20_000)),
        maybe("settle_check_ticks", number(1..=100, 101..=5_000)),
    ])
}

fn workload() -> BoxedStrategy<Vec<(&'static str, Value)>> {
    table(vec![
        usually("trips_count", number(1..=6, 7..=60)),
        maybe("writers_count", number(1..=4, 5..=24)),
        maybe("workers_count", number(1..=3, 4..=12)),
        maybe("receivers_count", number(1..=3, 4..=12)),
        maybe("hotel_failure", ratio()),
        maybe("pending_batch", number(1..=8, 9..=200)),
        maybe("ids", style()),
        maybe("payloads", style()),
    ])
}

fn timing() -> BoxedStrategy<Vec<(&'static str, Value)>> {
    let restart = (0u64..=50, prop_oneof![4 => 0u64..=300, 1 => 301u64..=50_000]);
    (
        table(vec![
            maybe("step_ticks_max", number(1..=4, 5..=40)),
            maybe("poll_ticks", number(1..=300, 301..=5_000)),
            maybe("latency_ticks_max", number(1..=6, 7..=80)),
            maybe("reply_timeout_ticks", number(1..=200, 201..=5_000)),
            maybe("busy_backoff_ticks_max", number(1..=40, 41..=2_000)),
        ]),
        prop::option::of(restart),
        any::<bool>(),
    )
        .prop_map(|(mut entries, restart, both)| {
            if let Some((min, extra)) = restart {
                entries.push(("restart_ticks_max", int(min + extra)));
                if both {
                    entries.push(("restart_ticks_min", int(min)));
                }
            }
            entries
        })
        .boxed()
}

fn sqlite() -> BoxedStrategy<Vec<(&'static str, Value)>> {
    let sync = || text(&["off", "normal", "full", "extra"]);
    table(vec![
        maybe("journal_mode", text(&["wal", "delete"])),
        maybe("synchronous", sync()),
        maybe("receiver_synchronous", sync()),
    ])
}

fn power() -> BoxedStrategy<Vec<(&'static str, Value)>> {
    table(vec![
        maybe(
            "loss",
            prop_oneof![3 => Just(Value::String("0/1".into())), 2 => (1u32..=2, 50u32..=3_000).prop_map(|(n, d)| Value::String(format!("{n}/{d}"))), 1 => ratio()].boxed(),
        ),
        maybe("model", text(&["drop_unsynced", "random", "keep_all"])),
    ])
}

fn faults() -> BoxedStrategy<Draft> {
    let rates = |keys: &[&'static str]| table(keys.iter().map(|key| maybe(key, ratio())).collect());
    (
        table(vec![
            maybe("swarm", any::<bool>().prop_map(Value::Boolean).boxed()),
            maybe("key_conflict", ratio()),
            maybe("near_miss_key", ratio()),
        ]),
        rates(&["before_commit", "after_commit"]),
        rates(&[
            "after_read_pending",
            "before_deliver",
            "after_deliver",
            "before_mark_done",
            "after_mark_done",
        ]),
        rates(&["before_effect_commit", "after_effect_commit"]),
        rates(&["drop", "duplicate"]),
        pause(),
        skew(),
    )
        .prop_map(|(top, writer, worker, receiver, net, pause, skew)| {
            [
                ("faults", top),
                ("faults.writer", writer),
                ("faults.worker", worker),
                ("faults.receiver", receiver),
                ("faults.net", net),
                ("faults.pause", pause),
                ("faults.skew", skew),
            ]
            .into_iter()
            .filter(|(_, entries)| !entries.is_empty())
            .collect()
        })
        .boxed()
}

/// `[faults.pause]`: all three keys or none (each is required in the table).
fn pause() -> BoxedStrategy<Vec<(&'static str, Value)>> {
    prop_oneof![
        3 => Just(Vec::new()),
        1 => (ratio(), 1u64..=300, 0u64..=600).prop_map(|(rate, min, extra)| {
            vec![("rate", rate), ("ticks_min", int(min)), ("ticks_max", int(min + extra))]
        }),
    ]
    .boxed()
}

/// `[leases]`: a lease's length, sometimes shorter than a delivery, and
/// sometimes a margin (below the length, or rarely not: rejected).
fn leases() -> BoxedStrategy<Vec<(&'static str, Value)>> {
    prop_oneof![
        3 => Just(Vec::new()),
        1 => number(1..=300, 301..=5_000).prop_map(|ticks| vec![("ticks", ticks)]),
        1 => (1u64..=300, 0u64..=60, prop::bool::weighted(0.05)).prop_map(|(ticks, margin, over)| {
            let margin = if over { ticks + margin } else { margin.min(ticks - 1) };
            vec![("ticks", int(ticks)), ("margin_ticks", int(margin))]
        }),
    ]
    .boxed()
}

/// `[faults.skew]`: offsets within or beyond a lease margin, stepping or not.
fn skew() -> BoxedStrategy<Vec<(&'static str, Value)>> {
    prop_oneof![
        4 => Just(Vec::new()),
        1 => (number(1..=30, 31..=2_000), prop::option::of(ratio())).prop_map(|(max, step)| {
            let mut entries = vec![("max_ticks", max)];
            entries.extend(step.map(|step| ("step_rate", step)));
            entries
        }),
    ]
    .boxed()
}

/// `[retries]` (all three keys: each is required) and the retryable faults
/// that need it, as `(retries, faults.receiver, faults.net)`.
type RetryDraft = (
    Vec<(&'static str, Value)>,
    Vec<(&'static str, Value)>,
    Vec<(&'static str, Value)>,
);

fn retries() -> BoxedStrategy<RetryDraft> {
    let faults = (
        maybe("retryable", ratio()),
        maybe("poison", ratio()),
        maybe("retryable", ratio()),
    );
    prop_oneof![
        3 => Just((Vec::new(), Vec::new(), Vec::new())),
        // Retryable faults without timers: rejected, naming the fault's key.
        1 => maybe("retryable", ratio()).prop_map(|net| (Vec::new(), Vec::new(), net.into_iter().collect())),
        3 => ((1u64..=6, 1u64..=100, 0u64..=400), faults).prop_map(|((attempts, base, extra), (retryable, poison, net))| {
            let retries = vec![
                ("max_attempts", int(attempts)),
                ("backoff_base_ticks", int(base)),
                ("backoff_cap_ticks", int(base + extra)),
            ];
            (retries, retryable.into_iter().chain(poison).collect(), net.into_iter().collect())
        }),
    ]
    .boxed()
}

/// Appends `entries` to `table`'s, replacing any of the same key.
fn extend(draft: &mut Draft, table: &'static str, entries: Vec<(&'static str, Value)>) {
    for (key, value) in entries {
        set(draft, table, key, value);
    }
}

/// Scripted kills and power cuts: the tick in thousandths of the fault
/// phase (above 1000: past it, rejected), and the target (`None`: a cut).
fn script() -> BoxedStrategy<Vec<(u64, Option<String>)>> {
    let target = prop_oneof![
        2 => Just(None),
        12 => prop::sample::select(vec!["all", "writers", "workers", "receivers", "writer-0", "worker-0", "receiver-0"])
            .prop_map(|target| Some(target.to_string())),
        1 => prop::sample::select(vec!["worker-1", "writer-3", "receiver-2", "nobody"]).prop_map(|target| Some(target.to_string())),
    ];
    prop::collection::vec((prop_oneof![40 => 0u64..=1_000, 1 => 1_001u64..=3_000], target), 0..=3).boxed()
}

/// How a budget key is drawn: left out, near the loader's own limit, or free.
#[derive(Clone, Copy, Debug)]
enum Edge {
    Absent,
    /// The limit times (100 + percent) / 100, percent in −10..=+60.
    Near(i64),
    Free(u64),
}

fn edge(free: std::ops::RangeInclusive<u64>) -> BoxedStrategy<Edge> {
    prop_oneof![
        3 => Just(Edge::Absent),
        5 => (-10i64..=60).prop_map(Edge::Near),
        1 => free.prop_map(Edge::Free),
    ]
    .boxed()
}

fn near(limit: u64, percent: i64) -> u64 {
    let scaled = i128::from(limit) * i128::from(100 + percent) / 100;
    u64::try_from(scaled.max(1)).unwrap_or(u64::MAX)
}

fn render(draft: &Draft, script: &[(u64, Option<String>)]) -> String {
    let mut out = String::new();
    if let Some(top) = draft.get("") {
        for (key, value) in top {
            out.push_str(&format!("{key} = {value}\n"));
        }
    }
    for (name, entries) in draft.iter().filter(|(name, _)| !name.is_empty()) {
        out.push_str(&format!("\n[{name}]\n"));
        for (key, value) in entries {
            out.push_str(&format!("{key} = {value}\n"));
        }
    }
    for (tick, target) in script {
        out.push_str(&format!("\n[[script]]\ntick = {tick}\n"));
        match target {
            Some(target) => out.push_str(&format!("kill = {}\n", Value::String(target.clone()))),
            None => out.push_str("power_cut = true\n"),
        }
    }
    out
}

fn set(draft: &mut Draft, table: &'static str, key: &'static str, value: Value) {
    let entries = draft.entry(table).or_default();
    entries.retain(|(written, _)| *written != key);
    entries.push((key, value));
}

/// Power loss that can lose writes runs with durable settings on both
/// databases (module docs).
fn durable_if_power(draft: &mut Draft, script: &[(u64, Option<String>)], full: bool) {
    let written = |table: &str, key: &str| {
        draft
            .get(table)
            .and_then(|entries| entries.iter().find(|(written, _)| *written == key))
            .and_then(|(_, value)| value.as_str().map(str::to_string))
    };
    let loss = written("power", "loss").is_some_and(|loss| !loss.trim().starts_with('0'));
    let cut = script.iter().any(|(_, target)| target.is_none());
    let losing = written("power", "model").as_deref() != Some("keep_all");
    if (loss || cut) && losing {
        let level = if full { "full" } else { "extra" };
        set(draft, "sqlite", "synchronous", Value::String(level.into()));
        set(draft, "sqlite", "receiver_synchronous", Value::String(level.into()));
    }
}

/// The fault phase the draft asks for (the default if not written).
fn ticks_fault(draft: &Draft) -> u64 {
    draft
        .get("run")
        .and_then(|entries| entries.iter().find(|(key, _)| *key == "ticks_fault"))
        .and_then(|(_, value)| value.as_integer())
        .map_or(4_000, |ticks| u64::try_from(ticks).unwrap_or(0))
}

/// A scenario file over the whole format.
pub fn case() -> impl Strategy<Value = Case> {
    let tables = (
        top(),
        run(),
        workload(),
        timing(),
        sqlite(),
        power(),
        faults(),
        leases(),
    );
    let hazards = (retries(), edge(0..=60_000));
    let budgets = (
        edge(1..=5_000),
        edge(1..=200_000),
        edge(1..=5_000_000),
        edge(0..=20_000),
    );
    let mischief = prop_oneof![4 => Just(None), 1 => (any::<prop::sample::Index>(), poison()).prop_map(Some)];
    (tables, hazards, script(), budgets, any::<bool>(), mischief).prop_map(
        |((top, run, workload, timing, sqlite, power, faults, leases), hazards, script, budgets, full, mischief)| {
            let mut draft: Draft = faults;
            for (name, entries) in [
                ("", top),
                ("run", run),
                ("workload", workload),
                ("timing", timing),
                ("sqlite", sqlite),
                ("power", power),
                ("leases", leases),
            ] {
                if !entries.is_empty() || !matches!(name, "leases") {
                    draft.insert(name, entries);
                }
            }
            let ((retries, receiver, net), retention) = hazards;
            if !retries.is_empty() {
                draft.insert("retries", retries);
            }
            extend(&mut draft, "faults.receiver", receiver);
            extend(&mut draft, "faults.net", net);
            let fault_phase = ticks_fault(&draft);
            let script: Vec<(u64, Option<String>)> = script
                .into_iter()
                .map(|(thousandths, target)| (fault_phase.saturating_mul(thousandths) / 1_000, target))
                .collect();
            durable_if_power(&mut draft, &script, full);
            // Budgets near the loader's limits, each from the draft so far.
            let (timeout, quiet, ticks, steps) = budgets;
            type Limit = fn(&Scenario) -> u64;
            let rules: [(&'static str, &'static str, Edge, Limit); 5] = [
                ("timing", "reply_timeout_ticks", timeout, |s| {
                    Budget::of(s).round_trip + 1
                }),
                ("run", "quiet_ticks_min", quiet, |s| Budget::of(s).quiet_floor),
                ("run", "ticks_max", ticks, |s| {
                    Budget::of(s).ticks_needed(s.run.ticks_fault)
                }),
                ("run", "steps_max", steps, |s| {
                    Budget::of(s).steps_needed(s.run.ticks_fault)
                }),
                // Last: the horizon grows with the timeouts drawn above.
                ("receivers", "dedup_retention_ticks", retention, |s| {
                    crashsim::scenario::horizon(s).ticks
                }),
            ];
            for (table, key, edge, limit) in rules {
                let value = match edge {
                    Edge::Absent => continue,
                    Edge::Free(value) => value,
                    Edge::Near(percent) => match toml::from_str::<Scenario>(&render(&draft, &script)) {
                        Ok(scenario) => near(limit(&scenario), percent),
                        Err(_) => continue,
                    },
                };
                set(&mut draft, table, key, int(value));
            }
            if let Some((index, value)) = mischief {
                let written: Vec<(&'static str, &'static str)> = draft
                    .iter()
                    .flat_map(|(table, entries)| entries.iter().map(move |(key, _)| (*table, *key)))
                    .collect();
                if !written.is_empty() {
                    let (table, key) = written[index.index(written.len())];
                    set(&mut draft, table, key, value);
                }
            }
            Case {
                text: render(&draft, &script),
            }
        },
    )
}
