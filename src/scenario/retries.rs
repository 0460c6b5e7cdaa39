//! The scenario keys of durable retry timers and de-duplication retention:
//! `[retries]` and `[receivers]`, and the retry horizon derived from them.
//!
//! Both are off unless written and leave nothing behind in a scenario (or a
//! capsule) that does not use them. The retryable failures that make timers
//! matter are fault rates under `[faults.receiver]` and `[faults.net]`
//! (`retryable`, `poison`; `mod.rs`).
//!
//! ```toml
//! [retries]                  # a retryable failure is retried by a durable timer
//! max_attempts = 4           # failed attempts before the command is dead-lettered
//! backoff_base_ticks = 40    # delay after attempt n: min(cap, base·2^(n-1)) + jitter
//! backoff_cap_ticks = 320    # jitter: uniform in [0, delay/2], from the worker's stream
//!
//! [receivers]
//! dedup_retention_ticks = 40_000   # de-dup records older than this are purged
//! ```
//!
//! The horizon rule (PROTOCOL.md §4 last bullet, mistake 12): a receiver must
//! keep a de-duplication record as long as a producer may still re-deliver a
//! command it already applied. `horizon` bounds that time conservatively; a
//! scenario whose retention is shorter is rejected at load, unless it is a
//! demonstration (a file under `demonstrations/`), which is expected to fail.

use serde::{Deserialize, Serialize};

use super::budget::Budget;
use super::validate::Rejection;
use super::{Scenario, SkewFaults};

/// Durable retry timers: how often and how far apart a command that failed
/// retryably is retried before it is dead-lettered (`store::timers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RetriesToml")]
pub struct Retries {
    /// Failed attempts after which the command goes to the dead letter
    /// (manual handling), never to done.
    pub max_attempts: u32,
    /// The delay after the first failed attempt, in ticks.
    pub backoff_base_ticks: u64,
    /// The longest delay before jitter, in ticks.
    pub backoff_cap_ticks: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RetriesToml {
    max_attempts: u32,
    backoff_base_ticks: u64,
    backoff_cap_ticks: u64,
}

impl TryFrom<RetriesToml> for Retries {
    type Error = String;

    fn try_from(toml: RetriesToml) -> Result<Retries, String> {
        if toml.max_attempts == 0 || toml.max_attempts > 30 {
            return Err(format!(
                "retries.max_attempts must be between 1 and 30, got {}",
                toml.max_attempts
            ));
        }
        if toml.backoff_base_ticks == 0 || toml.backoff_cap_ticks > 1_000_000 {
            return Err(format!(
                "retries needs 1 <= backoff_base_ticks and backoff_cap_ticks <= 1000000, got {} and {}",
                toml.backoff_base_ticks, toml.backoff_cap_ticks
            ));
        }
        if toml.backoff_base_ticks > toml.backoff_cap_ticks {
            return Err(format!(
                "retries.backoff_base_ticks must not exceed backoff_cap_ticks ({} > {})",
                toml.backoff_base_ticks, toml.backoff_cap_ticks
            ));
        }
        Ok(Retries {
            max_attempts: toml.max_attempts,
            backoff_base_ticks: toml.backoff_base_ticks,
            backoff_cap_ticks: toml.backoff_cap_ticks,
        })
    }
}

impl Retries {
    /// The longest a timer can wait: the cap plus its largest jitter.
    pub fn longest_delay(&self) -> u64 {
        self.backoff_cap_ticks.saturating_add(self.backoff_cap_ticks / 2)
    }

    /// The store's policy for these keys.
    pub fn policy(&self) -> crate::store::RetryPolicy {
        crate::store::RetryPolicy {
            max_attempts: self.max_attempts,
            backoff_base_ticks: self.backoff_base_ticks,
            backoff_cap_ticks: self.backoff_cap_ticks,
        }
    }
}

/// The receivers' own keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receivers {
    /// De-duplication records older than this many ticks (by the run's
    /// clock) are purged; absent: kept forever. Must not be below the
    /// retry horizon (`horizon`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedup_retention_ticks: Option<u64>,
}

/// The retry horizon, with its parts, for the rule and its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Horizon {
    pub ticks: u64,
    /// One attempt's worst case: the longest timer, a poll, a reply
    /// timeout, a round trip and a restart.
    pub attempt: u64,
    pub attempts: u64,
    /// Lease, pause and busy backoffs, once.
    pub extra: u64,
}

/// How long after a receiver applied a command a producer may still
/// deliver it again, at most (conservative):
///
/// `H = max_attempts × (cap + cap/2 + P + T + RT + restart_max) + lease + pause_max + 2·B + 4·S`
///
/// Each failed attempt may wait for the longest timer (`cap` plus jitter up
/// to `cap/2`), then for an idle worker's poll (`P`), then for a reply that
/// never comes (`T`, the reply was lost) and a resend's round trip (`RT`),
/// or for a worker that died with the row and restarts (`restart_max`). On
/// top: a lease the dead holder kept (`lease`), a pause of the holder
/// (`pause_max`), a busy backoff (`2·B`), and clock skew (`S`, the
/// `[faults.skew]` bound): a timer is due by the clock of the worker that
/// stored it but read by another's, up to `2·S` apart, and the receiver
/// stamps and purges its records by its own clock, which may step by up to
/// `2·S` in between. Without `[retries]` there is one attempt and no timer.
pub fn horizon(scenario: &Scenario) -> Horizon {
    let timing = &scenario.timing;
    let budget = Budget::of(scenario);
    let (attempts, longest) = match scenario.retries {
        Some(retries) => (u64::from(retries.max_attempts), retries.longest_delay()),
        None => (1, 0),
    };
    let attempt = [
        longest,
        timing.poll_ticks,
        timing.reply_timeout_ticks,
        budget.round_trip,
        timing.restart_ticks_max,
    ]
    .iter()
    .fold(0u64, |total, value| total.saturating_add(*value));
    let extra = scenario
        .leases
        .map_or(0, |leases| leases.ticks)
        .saturating_add(scenario.faults.pause.map_or(0, |pause| pause.ticks_max))
        .saturating_add(timing.busy_backoff_ticks_max.saturating_mul(2))
        .saturating_add(SkewFaults::bound(scenario.faults.skew).saturating_mul(4));
    Horizon {
        ticks: attempts.saturating_mul(attempt).saturating_add(extra),
        attempt,
        attempts,
        extra,
    }
}

impl Scenario {
    /// The retryable faults need timers to retry them, and the store must
    /// have timers.
    pub(super) fn validate_retries_shape(&self) -> Result<(), Rejection> {
        let faults = &self.faults;
        if self.retries.is_none() {
            for (key, rate) in [
                ("faults.receiver.retryable", faults.receiver.retryable),
                ("faults.receiver.poison", faults.receiver.poison),
                ("faults.net.retryable", faults.net.retryable),
            ] {
                if !rate.is_zero() {
                    return Err(Rejection::new(
                        key,
                        "a retryable failure needs [retries] (max_attempts, backoff_base_ticks, \
                         backoff_cap_ticks) to be retried by"
                            .to_string(),
                    ));
                }
            }
        }
        if self.retries.is_some()
            && let Some(implementation) = crate::mutants::resolve(&self.store)
            && !implementation.retries()
        {
            return Err(Rejection::new(
                "retries",
                format!(
                    "{} has no retry timers (Store::schedule_retry): leave [retries] out, or use a store that has them",
                    self.store
                ),
            ));
        }
        Ok(())
    }

    /// The retention rule: `receivers.dedup_retention_ticks` is not below
    /// the retry horizon. Demonstrations skip it (`parse`).
    pub fn validate_retention(&self) -> Result<(), Rejection> {
        let Some(retention) = self.receivers.and_then(|receivers| receivers.dedup_retention_ticks) else {
            return Ok(());
        };
        let horizon = horizon(self);
        if retention >= horizon.ticks {
            return Ok(());
        }
        Err(Rejection::new(
            "receivers.dedup_retention_ticks",
            format!(
                "{retention} is below the retry horizon, {} ticks (max_attempts {} × (longest timer + \
                 poll_ticks + reply_timeout_ticks + round trip + restart_ticks_max = {}) + lease, pause and \
                 busy backoff {}): a late retry of a command the receiver already applied would find no \
                 de-duplication record and apply it twice (PROTOCOL.md §7 mistake 12); raise it to at least {}, \
                 or leave it out (records are then kept forever)",
                horizon.ticks, horizon.attempts, horizon.attempt, horizon.extra, horizon.ticks
            ),
        )
        .near(&["retries.max_attempts", "retries.backoff_cap_ticks"]))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::scenario::parse;

    fn parse_at(text: &str, path: &str) -> Result<Scenario, String> {
        parse(text, Path::new(path)).map_err(|error| error.to_string())
    }

    fn parse_text(text: &str) -> Result<Scenario, String> {
        parse_at(text, "scenarios/test.toml")
    }

    const RETRIES: &str = "[retries]\nmax_attempts = 4\nbackoff_base_ticks = 40\nbackoff_cap_ticks = 320\n";

    #[test]
    fn off_unless_written_and_absent_from_what_is_written_back() {
        let scenario = parse_text("description = \"x\"\n").unwrap();
        assert!(scenario.retries.is_none() && scenario.receivers.is_none());
        let text = toml::to_string(&scenario).unwrap();
        assert!(
            !text.contains("[retries]")
                && !text.contains("[receivers]")
                && !text.contains("retryable")
                && !text.contains("poison"),
            "{text}"
        );
    }

    #[test]
    fn keys_parse_and_round_trip() {
        let text = format!(
            "{RETRIES}[receivers]\ndedup_retention_ticks = 100000\n[faults.receiver]\nretryable = \"1/4\"\npoison = \"1/15\"\n[faults.net]\nretryable = \"1/20\"\n"
        );
        let scenario = parse_text(&text).unwrap();
        let retries = scenario.retries.unwrap();
        assert_eq!((retries.max_attempts, retries.backoff_cap_ticks), (4, 320));
        assert_eq!(retries.longest_delay(), 480);
        let again = parse_text(&toml::to_string(&scenario).unwrap()).unwrap();
        assert_eq!(again.retries, scenario.retries);
        assert_eq!(again.receivers, scenario.receivers);
        assert_eq!(again.faults.receiver.poison, scenario.faults.receiver.poison);
        assert_eq!(again.faults.net.retryable, scenario.faults.net.retryable);
    }

    #[test]
    fn bad_values_name_their_key() {
        let message = parse_text("[retries]\nmax_attempts = 0\nbackoff_base_ticks = 1\nbackoff_cap_ticks = 2\n");
        assert!(message.unwrap_err().contains("retries"));
        let message = parse_text("[retries]\nmax_attempts = 3\nbackoff_base_ticks = 9\nbackoff_cap_ticks = 2\n");
        assert!(message.unwrap_err().contains("backoff_base_ticks"));
    }

    #[test]
    fn retention_below_the_horizon_is_rejected_with_the_number_to_reach() {
        let scenario = parse_text(RETRIES).unwrap();
        let needed = horizon(&scenario).ticks;
        // 4 × (480 + 250 + 60 + 2·4 + 4·3·4 + 200) + 2·32.
        assert_eq!(needed, 4 * (480 + 250 + 60 + 56 + 200) + 64);
        let short = format!("{RETRIES}[receivers]\ndedup_retention_ticks = {}\n", needed - 1);
        let message = parse_text(&short).unwrap_err();
        assert!(message.starts_with("scenarios/test.toml:"), "{message}");
        assert!(message.contains("receivers.dedup_retention_ticks"), "{message}");
        assert!(message.contains(&format!("at least {needed}")), "{message}");
        // A demonstration is expected to fail, so it may set it short.
        assert!(parse_at(&short, "scenarios/demonstrations/purge.toml").is_ok());
        let enough = format!("{RETRIES}[receivers]\ndedup_retention_ticks = {needed}\n");
        assert!(parse_text(&enough).is_ok());
    }
}
