//! JUnit XML for CI systems (through `quick-junit`, the crate nextest
//! uses): one test suite per scenario (or for the mutant table), a test case
//! per seed range and one per failing seed, so a CI page lists each failing
//! seed with its first violation and its replay command.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::json::ScenarioSummary;
use crate::detect::Row;

fn failure(message: &str, description: &str) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    status.set_message(message).set_description(description);
    status
}

/// A test case that could not be judged: an error, never a failure.
fn error(message: &str, description: &str) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status.set_message(message).set_description(description);
    status
}

fn render(report: &Report) -> String {
    report.to_string().expect("JUnit reports serialise")
}

/// The report of `crashsim run`: per scenario, the seed range and each failing seed.
pub fn run(summaries: &[ScenarioSummary]) -> String {
    let mut report = Report::new("crashsim run");
    for summary in summaries {
        let mut suite = TestSuite::new(summary.scenario.as_str());
        let range = format!("{} seeds", summary.seeds);
        let status = if summary.failed == 0 {
            TestCaseStatus::success()
        } else {
            failure(
                &format!("{} of {} seeds failed", summary.failed, summary.seeds),
                &summary
                    .violations_by_invariant
                    .iter()
                    .map(|(invariant, seeds)| format!("{invariant}: {seeds} seed(s)"))
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        };
        let mut case = TestCase::new(range, status);
        case.set_classname(summary.scenario.as_str());
        suite.add_test_case(case);
        for failing in &summary.failing_seeds {
            let mut case = TestCase::new(
                format!("seed {}", failing.seed),
                failure(&failing.first, &format!("replay with `{}`", failing.replay)),
            );
            case.set_classname(summary.scenario.as_str());
            suite.add_test_case(case);
        }
        for errored in &summary.errors {
            let mut case = TestCase::new(
                format!("seed {}", errored.seed),
                error(
                    &format!("{} (not a finding): {}", errored.error.kind.name(), errored.error.cause),
                    &format!("replay with `{}`", errored.replay),
                ),
            );
            case.set_classname(summary.scenario.as_str());
            suite.add_test_case(case);
        }
        if summary.interrupted.is_some() || summary.not_run > 0 {
            let why = match &summary.interrupted {
                Some(signal) => format!("interrupted by {signal}"),
                None => "stopped at an error that would meet every later seed".to_string(),
            };
            let mut case = TestCase::new(
                format!("{} seeds not run", summary.not_run),
                error(
                    &why,
                    &format!(
                        "seeds that ended: {}",
                        if summary.covered.is_empty() {
                            "none"
                        } else {
                            &summary.covered
                        }
                    ),
                ),
            );
            case.set_classname(summary.scenario.as_str());
            suite.add_test_case(case);
        }
        if summary.require_fired && !summary.coverage.gaps.is_empty() {
            let gaps = &summary.coverage.gaps;
            let status = failure(&format!("coverage gate: {} gap(s)", gaps.len()), &gaps.join("\n"));
            let mut case = TestCase::new("coverage", status);
            case.set_classname(summary.scenario.as_str());
            suite.add_test_case(case);
        }
        if !summary.missing_partitions.is_empty() {
            let missing: Vec<String> = summary.missing_partitions.iter().map(ToString::to_string).collect();
            let status = error(
                &format!("missing partitions: {}", missing.join(", ")),
                "no summary of these jobs was merged: their seeds were not judged",
            );
            let mut case = TestCase::new("partitions", status);
            case.set_classname(summary.scenario.as_str());
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    render(&report)
}

/// The report of `crashsim mutants`: a test case per mutant (failing if it
/// escaped) and one for the reference (failing if it was not clean).
pub fn mutants(rows: &[Row], seeds_max: u64) -> String {
    let mut report = Report::new("crashsim mutants");
    let mut suite = TestSuite::new("mutants");
    for row in rows {
        let status = if row.ok() {
            TestCaseStatus::success()
        } else if row.mutant == "reference" {
            let invariants: Vec<String> = row.invariants.iter().map(ToString::to_string).collect();
            failure(
                &format!(
                    "the reference failed {} (scenario {}, seed {})",
                    invariants.join(", "),
                    row.scenario.as_deref().unwrap_or("?"),
                    row.first_seed.unwrap_or_default()
                ),
                "",
            )
        } else if row.caught {
            failure(
                &format!(
                    "caught only by {}, never by its documented {} (within {seeds_max} seeds of any scenario)",
                    crate::detect::listed(&row.invariants),
                    crate::detect::listed(&row.caught_by)
                ),
                "",
            )
        } else if row.untested() {
            failure(
                "untested: it runs as the reference on every scenario of the table (its difference lives in \
                 calls none of them makes)",
                "",
            )
        } else {
            failure(
                &format!("escaped: not caught within {seeds_max} seeds in any scenario"),
                "",
            )
        };
        let mut case = TestCase::new(row.mutant.as_str(), status);
        case.set_classname("mutants");
        suite.add_test_case(case);
    }
    report.add_test_suite(suite);
    render(&report)
}

/// The report of `crashsim shrink`: one failing test case, the shrunk run.
pub fn shrink(scenario: &str, seed: u64, message: &str, replay: &str) -> String {
    let mut report = Report::new("crashsim shrink");
    let mut suite = TestSuite::new(scenario);
    let mut case = TestCase::new(
        format!("seed {seed} (shrunk)"),
        failure(message, &format!("replay with `{replay}`")),
    );
    case.set_classname(scenario);
    suite.add_test_case(case);
    report.add_test_suite(suite);
    render(&report)
}

/// One capsule of a regression corpus as `run --regressions` replayed it.
pub struct Regression {
    /// The capsule's path.
    pub capsule: String,
    /// Why it did not give the verdict it records; none if it did.
    pub mismatch: Option<String>,
    /// The command that replays it.
    pub replay: String,
    pub trace_hash: String,
}

/// The report of `crashsim run --regressions`: a test case per capsule,
/// failing when it no longer gives the verdict it records.
pub fn regressions(corpus: &str, capsules: &[Regression]) -> String {
    let mut report = Report::new("crashsim regressions");
    let mut suite = TestSuite::new(corpus);
    // A gate that replayed nothing says so where CI shows it, never silently.
    if capsules.is_empty() {
        let mut status = TestCaseStatus::skipped();
        status.set_message(format!(
            "the regression corpus {corpus} holds no capsule: nothing was replayed"
        ));
        let mut case = TestCase::new("no capsule", status);
        case.set_classname(corpus);
        suite.add_test_case(case);
    }
    for capsule in capsules {
        let status = match &capsule.mismatch {
            None => TestCaseStatus::success(),
            Some(why) => failure(why, &format!("replay with `{}`", capsule.replay)),
        };
        let mut case = TestCase::new(capsule.capsule.as_str(), status);
        case.set_classname(corpus);
        suite.add_test_case(case);
    }
    report.add_test_suite(suite);
    render(&report)
}
