//! The outside store's part of the bench record (`bench --sut CMD`): which
//! store was measured, which configurations were its, and the ratios that
//! say how much of its number is its own and how much is the pipe.
//!
//! - `append_vs_limit`: `sut_append_full` ÷ the limit: what it makes of
//!   the disk (and ÷ the `fdatasync` limit, which a store whose SQLite was
//!   built with `HAVE_FDATASYNC` is bound by instead);
//! - `append_vs_reference`: `sut_append_full` ÷ `append_full`, crashsim's
//!   reference on the same disk in the same run (and the same for one
//!   outbox command);
//! - the ping: its p50 and p99 latency, and its p50 as a share of an
//!   append's p50: the part of every append that is the protocol's own
//!   cost (process switch, JSON, pipe), whatever the store does;
//! - a suspension (`sut_suspend`: an append parked inside the store's
//!   SQLite at its first scheduling point, then resumed): its p50 and p99,
//!   and what it adds to `sut_append_full`'s p50 (the rendezvous);
//! - a connection's start-up (to its `open` answer), forked by the fork
//!   server and started from the command: p50 and p99 of each, and how
//!   many times faster the fork is (what every actor restart of a run pays).

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::figures::ConfigRecord;
use super::plan::{FDATASYNC_LIMIT, LIMIT};
use crate::report::number::short;
use crate::store::Granularity;

/// Which outside store was measured, as the command line and its handshake name it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SutIdentity {
    /// The `--sut` command line.
    pub command: String,
    /// The adapter's name and version, from its handshake.
    pub name: String,
    pub version: Option<String>,
    /// How its store role is driven in scenario runs (`step` or `call`);
    /// the bench sends one `append` request per append either way.
    pub granularity: Granularity,
}

impl SutIdentity {
    /// `name 1.0 via `command` (store: step)`.
    pub fn describe(&self) -> String {
        format!(
            "{}{} via `{}` (store: {})",
            self.name,
            self.version.as_deref().map(|v| format!(" {v}")).unwrap_or_default(),
            self.command,
            match self.granularity {
                Granularity::Step => "step",
                Granularity::Call => "call",
            }
        )
    }
}

/// The ratios of the outside store's configurations; `null` when a
/// configuration they need did not run (`--only`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SutRatios {
    /// `sut_append_full` ÷ `raw_overwrite_fsync_4k` (appends/s medians).
    pub append_vs_limit: Option<f64>,
    /// `sut_append_full` ÷ `raw_overwrite_fdatasync_4k`.
    pub append_vs_fdatasync_limit: Option<f64>,
    /// `sut_append_full` ÷ `append_full`: next to crashsim's reference.
    pub append_vs_reference: Option<f64>,
    /// `sut_append_outbox1_full` ÷ `append_outbox1_full`.
    pub outbox1_vs_reference: Option<f64>,
    /// `sut_ping` p50 ÷ `sut_append_full` p50: the protocol's share of an append.
    pub ping_share_of_append_p50: Option<f64>,
    /// `sut_connect_spawn` p50 ÷ `sut_connect_fork` p50: how many times
    /// faster a forked connection starts.
    #[serde(default)]
    pub connect_spawn_vs_fork_p50: Option<f64>,
    /// `sut_suspend` p50 ÷ `sut_append_full` p50: a suspended call's
    /// latency against a plain one's.
    #[serde(default)]
    pub suspend_vs_append_p50: Option<f64>,
}

/// The record's `sut` object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SutRecord {
    #[serde(flatten)]
    pub identity: SutIdentity,
    /// The configurations that measured it (each also has `"sut": true`).
    pub configs: Vec<String>,
    /// The no-op request's latency: the protocol's own cost per call, µs.
    pub ping_p50_us: Option<f64>,
    pub ping_p99_us: Option<f64>,
    /// A new connection to its `open` answer, forked (`sut_connect_fork`), µs.
    #[serde(default)]
    pub connect_fork_p50_us: Option<f64>,
    #[serde(default)]
    pub connect_fork_p99_us: Option<f64>,
    /// The same, a process started from the command (`sut_connect_spawn`), µs.
    #[serde(default)]
    pub connect_spawn_p50_us: Option<f64>,
    #[serde(default)]
    pub connect_spawn_p99_us: Option<f64>,
    /// An append suspended at its first point and resumed (`sut_suspend`), µs.
    #[serde(default)]
    pub suspend_p50_us: Option<f64>,
    #[serde(default)]
    pub suspend_p99_us: Option<f64>,
    /// `sut_suspend` p50 less `sut_append_full` p50: what the rendezvous
    /// adds to a call, µs.
    #[serde(default)]
    pub rendezvous_p50_us: Option<f64>,
    pub ratios: SutRatios,
}

impl SutRecord {
    pub fn new(identity: SutIdentity, configs: &[ConfigRecord]) -> SutRecord {
        let find = |name: &str| configs.iter().find(|config| config.name == name);
        let rate_ratio = |a: &str, b: &str| match (find(a), find(b)) {
            (Some(a), Some(b)) if b.appends_per_s > 0.0 => Some(a.appends_per_s / b.appends_per_s),
            _ => None,
        };
        let ping = find("sut_ping");
        let ping_share = match (ping, find("sut_append_full")) {
            (Some(ping), Some(append)) if append.p50_us > 0.0 => Some(ping.p50_us / append.p50_us),
            _ => None,
        };
        let (suspend, append) = (find(super::plan::SUSPEND), find("sut_append_full"));
        let suspend_ratio = match (suspend, append) {
            (Some(suspend), Some(append)) if append.p50_us > 0.0 => Some(suspend.p50_us / append.p50_us),
            _ => None,
        };
        let rendezvous = suspend
            .zip(append)
            .map(|(suspend, append)| suspend.p50_us - append.p50_us);
        let (fork, spawn) = (find("sut_connect_fork"), find("sut_connect_spawn"));
        let connect_ratio = match (fork, spawn) {
            (Some(fork), Some(spawn)) if fork.p50_us > 0.0 => Some(spawn.p50_us / fork.p50_us),
            _ => None,
        };
        SutRecord {
            identity,
            configs: configs
                .iter()
                .filter(|config| config.sut)
                .map(|config| config.name.clone())
                .collect(),
            ping_p50_us: ping.map(|ping| ping.p50_us),
            ping_p99_us: ping.map(|ping| ping.p99_us),
            connect_fork_p50_us: fork.map(|fork| fork.p50_us),
            connect_fork_p99_us: fork.map(|fork| fork.p99_us),
            connect_spawn_p50_us: spawn.map(|spawn| spawn.p50_us),
            connect_spawn_p99_us: spawn.map(|spawn| spawn.p99_us),
            suspend_p50_us: suspend.map(|suspend| suspend.p50_us),
            suspend_p99_us: suspend.map(|suspend| suspend.p99_us),
            rendezvous_p50_us: rendezvous,
            ratios: SutRatios {
                append_vs_limit: rate_ratio("sut_append_full", LIMIT),
                append_vs_fdatasync_limit: rate_ratio("sut_append_full", FDATASYNC_LIMIT),
                append_vs_reference: rate_ratio("sut_append_full", "append_full"),
                outbox1_vs_reference: rate_ratio("sut_append_outbox1_full", "append_outbox1_full"),
                ping_share_of_append_p50: ping_share,
                connect_spawn_vs_fork_p50: connect_ratio,
                suspend_vs_append_p50: suspend_ratio,
            },
        }
    }

    /// The lines under the table: who was measured, then each ratio measured.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "outside store (sut_*): {}; its fsyncs are unknown (-): they happen in another process",
            self.identity.describe()
        )];
        let ratios = &self.ratios;
        for (label, value) in [
            (format!("sut_append_full ÷ {LIMIT}"), ratios.append_vs_limit),
            (
                format!("sut_append_full ÷ {FDATASYNC_LIMIT}"),
                ratios.append_vs_fdatasync_limit,
            ),
            ("sut_append_full ÷ append_full".to_string(), ratios.append_vs_reference),
            (
                "sut_append_outbox1_full ÷ append_outbox1_full".to_string(),
                ratios.outbox1_vs_reference,
            ),
        ] {
            if let Some(value) = value {
                lines.push(format!("{label}: {value:.2}"));
            }
        }
        if let (Some(p50), Some(p99)) = (self.ping_p50_us, self.ping_p99_us) {
            let mut line = format!(
                "ping (the protocol's own cost per call): p50 {} µs, p99 {} µs",
                short(p50),
                short(p99)
            );
            if let Some(share) = ratios.ping_share_of_append_p50 {
                let _ = write!(line, "; {} of sut_append_full's p50", percent(share));
            }
            lines.push(line);
        }
        if let (Some(p50), Some(p99)) = (self.suspend_p50_us, self.suspend_p99_us) {
            let mut line = format!(
                "a suspended append (parked at its first point inside SQLite, then resumed): p50 {} µs, p99 {} µs",
                short(p50),
                short(p99)
            );
            if let (Some(added), Some(ratio)) = (self.rendezvous_p50_us, ratios.suspend_vs_append_p50) {
                let sign = if added < 0.0 { "−" } else { "+" };
                let _ = write!(
                    line,
                    "; {sign}{} µs ({ratio:.2}×) over sut_append_full's p50: the rendezvous",
                    short(added.abs())
                );
            }
            lines.push(line);
        }
        let connect = |p50: Option<f64>, p99: Option<f64>| {
            p50.zip(p99)
                .map(|(p50, p99)| format!("p50 {} µs, p99 {} µs", short(p50), short(p99)))
        };
        let forked = connect(self.connect_fork_p50_us, self.connect_fork_p99_us);
        let started = connect(self.connect_spawn_p50_us, self.connect_spawn_p99_us);
        if forked.is_some() || started.is_some() {
            let mut line = "a connection's start-up (to its `open` answer):".to_string();
            if let Some(forked) = forked {
                let _ = write!(line, " forked {forked};");
            }
            if let Some(started) = started {
                let _ = write!(line, " started {started};");
            }
            if let Some(ratio) = ratios.connect_spawn_vs_fork_p50 {
                let _ = write!(line, " the fork is {ratio:.1}× faster at p50;");
            }
            line.pop();
            lines.push(line);
        }
        lines
    }
}

/// A share as a percentage with two significant digits or so: `0.32%`, `4.1%`, `37%`.
fn percent(share: f64) -> String {
    let percent = share * 100.0;
    if percent < 1.0 {
        format!("{percent:.2}%")
    } else if percent < 10.0 {
        format!("{percent:.1}%")
    } else {
        format!("{percent:.0}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::record::tests::record_with_sut;

    #[test]
    fn ratios_compare_medians_and_the_ping_is_a_share_of_the_append_p50() {
        let record = record_with_sut();
        let sut = record.sut.as_ref().expect("a sut record");
        let rate = |name: &str| record.config(name).unwrap().appends_per_s;
        assert_eq!(
            sut.configs,
            [
                "sut_append_full",
                "sut_append_outbox1_full",
                "sut_ping",
                "sut_suspend",
                "sut_connect_fork",
                "sut_connect_spawn"
            ]
        );
        let suspend = record.config("sut_suspend").unwrap();
        assert_eq!(sut.suspend_p99_us, Some(suspend.p99_us));
        let append_p50 = record.config("sut_append_full").unwrap().p50_us;
        assert_eq!(sut.rendezvous_p50_us, Some(suspend.p50_us - append_p50));
        assert_eq!(sut.ratios.suspend_vs_append_p50, Some(suspend.p50_us / append_p50));
        assert!(
            sut.lines()
                .join("\n")
                .contains("over sut_append_full's p50: the rendezvous")
        );
        let (fork, spawn) = (
            record.config("sut_connect_fork").unwrap(),
            record.config("sut_connect_spawn").unwrap(),
        );
        assert_eq!(sut.connect_fork_p99_us, Some(fork.p99_us));
        assert_eq!(sut.ratios.connect_spawn_vs_fork_p50, Some(spawn.p50_us / fork.p50_us));
        assert_eq!(sut.ratios.append_vs_limit, Some(rate("sut_append_full") / rate(LIMIT)));
        assert_eq!(
            sut.ratios.append_vs_reference,
            Some(rate("sut_append_full") / rate("append_full"))
        );
        let ping = record.config("sut_ping").unwrap();
        let append = record.config("sut_append_full").unwrap();
        assert_eq!(sut.ping_p50_us, Some(ping.p50_us));
        assert_eq!(sut.ratios.ping_share_of_append_p50, Some(ping.p50_us / append.p50_us));
        let lines = sut.lines().join("\n");
        assert!(
            lines.contains("example_store 1.0 via `python3 example_store.py` (store: step)"),
            "{lines}"
        );
        assert!(lines.contains("sut_append_full ÷ append_full") && lines.contains("of sut_append_full's p50"));
    }

    #[test]
    fn shares_keep_their_digits() {
        assert_eq!(percent(0.0032), "0.32%");
        assert_eq!(percent(0.041), "4.1%");
        assert_eq!(percent(0.37), "37%");
    }

    #[test]
    fn a_ratio_whose_configuration_did_not_run_is_null() {
        let identity = SutIdentity {
            command: "x".to_string(),
            name: "x".to_string(),
            version: None,
            granularity: Granularity::Call,
        };
        let sut = SutRecord::new(identity, &[]);
        assert_eq!(sut.ratios, SutRatios::default());
        let json = serde_json::to_value(&sut).unwrap();
        assert!(json["ratios"]["append_vs_limit"].is_null() && json["ping_p50_us"].is_null());
        assert_eq!(json["granularity"], "call");
        assert_eq!(sut.lines().len(), 1);
    }
}
