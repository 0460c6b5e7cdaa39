//! The HTML report of a known failing seed shows the failing command_id and
//! the kill that caused it, and is written beside the seed's other files.
//!
//! The fixture: `split_transactions` commits the event before its commands,
//! so a writer killed at `writer.before_commit` leaves an event without its
//! outbox row (I1, I5), which the page must pin on that kill.

use crate::common;

use crashsim::report;
use crashsim::runner::SeedResult;
use crashsim::trace::Op;

/// Seeds tried, in order, until one has the failure the test is about.
const SEEDS_MAX: u64 = 5;

/// A violation's command whose insert was cut short by a kill at
/// `writer.before_commit`, if the seed has one.
fn command_lost_to_a_kill(result: &SeedResult) -> Option<String> {
    let events = result.events.as_ref()?;
    result.violations.iter().find_map(|violation| {
        // A tame id, which is its own anchor (smoke's ids are hostile).
        let command = violation
            .command_id
            .as_ref()
            .filter(|id| id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | ':')))?;
        let (position, insert) = events
            .iter()
            .enumerate()
            .find(|(_, event)| matches!(&event.op, Op::InsertCommand { command_id } if command_id == command))?;
        let next = events[position + 1..]
            .iter()
            .find(|event| event.actor == insert.actor)?;
        matches!(&next.op, Op::Kill { point } if point == "writer.before_commit").then(|| command.clone())
    })
}

#[test]
fn page_of_a_failing_seed_names_the_command_and_the_kill() {
    let loaded = common::load("scenarios/smoke.toml")
        .with_mutant("split_transactions")
        .expect("known mutant");
    let work = common::work_dir();
    let (result, command) = (0..SEEDS_MAX)
        .find_map(|seed| {
            let result = common::run(&loaded, seed, work.path());
            let command = command_lost_to_a_kill(&result)?;
            Some((result, command))
        })
        .expect("a seed among the first few loses a command to a kill at writer.before_commit");

    let reports = tempfile::tempdir().expect("temp dir");
    let replay = format!(
        "cargo run --release -- replay scenarios/smoke.toml --seed {} --mutant split_transactions",
        result.seed
    );
    let dir = report::write_seed(reports.path(), &result, &replay).expect("report written");
    let page = std::fs::read_to_string(dir.join("report.html")).expect("report.html exists");

    // The command's lifecycle row names the kill that cut its transaction short.
    let row_start = page
        .find(&format!("<tr id=\"cmd-{command}\""))
        .expect("the command has a lifecycle row");
    let row = &page[row_start..row_start + page[row_start..].find("</tr>").expect("row ends")];
    assert!(row.contains("writer.before_commit"), "row: {row}");
    assert!(row.contains("missing"), "row: {row}");

    // So does the first violation about it, next to the command id.
    let index = result
        .violations
        .iter()
        .position(|violation| violation.command_id.as_deref() == Some(command.as_str()))
        .expect("a violation names it");
    let card_start = page
        .find(&format!("<article class=\"violation\" id=\"v{}\">", index + 1))
        .expect("the violation is shown in full");
    let card = &page[card_start..card_start + page[card_start..].find("</article>").expect("card ends")];
    assert!(card.contains(&command));
    assert!(
        card.contains("was killed at <span class=\"kill\">writer.before_commit</span>"),
        "card: {card}"
    );
    assert!(card.contains("stored although no transaction that inserted it committed"));

    // The header carries the replay command; nothing is fetched from elsewhere.
    assert!(page.contains(&replay));
    assert!(!page.contains("http://") && !page.contains("https://"));

    // Every in-page link lands somewhere, and no id is used twice.
    let mut ids = attribute_values(&page, " id=\"");
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count, "duplicate ids");
    for target in attribute_values(&page, "href=\"#") {
        assert!(ids.binary_search(&target).is_ok(), "link to a missing #{target}");
    }
}

/// The values of every attribute that starts with `prefix` (up to the quote).
fn attribute_values<'p>(page: &'p str, prefix: &str) -> Vec<&'p str> {
    page.match_indices(prefix)
        .filter_map(|(at, _)| {
            let rest = &page[at + prefix.len()..];
            rest.find('"').map(|end| &rest[..end])
        })
        .collect()
}

/// A receiver that trims keys (`key_trim`) answers a near-miss probe with
/// the original key's result: the I7 card must show the probe and the
/// answer, in its trace lines and as a red row of expected vs found.
#[test]
fn an_i7_near_miss_card_shows_the_probe_and_the_receivers_answer() {
    let loaded = common::load("scenarios/smoke.toml")
        .with_mutant("key_trim")
        .expect("known mutant");
    let work = common::work_dir();
    let result = common::run(&loaded, 0, work.path());
    let first = result.violations.first().expect("key_trim is caught at seed 0");
    assert!(
        first.message.contains("was answered with the result of"),
        "{}",
        first.message
    );
    let page = report::html::seed_page(&result, "crashsim replay smoke --seed 0 --mutant key_trim");
    let card_start = page
        .find("<article class=\"violation\" id=\"v1\">")
        .expect("the first card");
    let card = &page[card_start..card_start + page[card_start..].find("</article>").expect("card ends")];
    for line in ["near-miss probe ", "prober: duplicate", "probe reply "] {
        assert!(card.contains(line), "the card's trace leaves out {line:?}");
    }
    let row_start = card.find("<th>near-miss probes</th>").expect("a near-miss row");
    let row = &card[row_start..row_start + card[row_start..].find("</tr>").expect("row ends")];
    assert!(
        row.contains("class=\"found-bad\""),
        "the near-miss row is not red: {row}"
    );
    assert!(row.contains("answered with the result of"), "{row}");
}
