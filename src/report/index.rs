//! `index.html` of a merged report: one self-contained page over every
//! scenario and job of a run, linking each failing seed's own page.

use std::fmt::Write;
use std::path::Path;

use super::html::esc;
use super::json::RunSummary;

/// The page; `seed_page(scenario, seed)` says whether that seed's
/// `report.html` was copied next to it (linked when it was).
pub fn page(summary: &RunSummary, has_page: impl Fn(&str, u64) -> bool) -> String {
    let mut html = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>crashsim: merged run</title>\n\
         <style>body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:80em}\
         table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}\
         th{background:#f4f4f4}.fail{color:#b00020;font-weight:600}.pass{color:#1b5e20}code{font-size:90%}</style>\n\
         </head><body>\n<h1>crashsim: merged run</h1>\n",
    );
    let _ = writeln!(
        html,
        "<p>outcome <b class=\"{}\">{}</b> · crashsim <code>{}</code> · SQLite {} · {} seeds, {} failed, {} errors · \
         merged from {} summaries</p>",
        if summary.outcome == "pass" { "pass" } else { "fail" },
        esc(&summary.outcome),
        esc(&summary.git_commit),
        esc(&summary.sqlite_version),
        summary.seeds,
        summary.failed,
        summary.errored,
        summary.merged_from.len()
    );
    for scenario in &summary.scenarios {
        let name = esc(&scenario.scenario);
        let _ = writeln!(
            html,
            "<h2>{name}</h2>\n<p>store {} · range {} · seeds {} · digest <code>{}</code></p>",
            esc(&scenario.store),
            esc(&scenario.selection.selection().range()),
            esc(&scenario.covered),
            esc(&scenario.digest)
        );
        if !scenario.missing_partitions.is_empty() {
            let missing: Vec<String> = scenario.missing_partitions.iter().map(ToString::to_string).collect();
            let _ = writeln!(
                html,
                "<p class=\"fail\">missing partitions: {}</p>",
                esc(&missing.join(", "))
            );
        }
        html.push_str("<table><tr><th>job</th><th>seeds</th><th>failed</th><th>errors</th><th>seconds</th><th>covered</th><th>summary</th></tr>\n");
        for part in &scenario.parts {
            let _ = writeln!(
                html,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}{}</td><td><code>{}</code></td></tr>",
                esc(&part.partition.map_or("whole range".to_string(), |p| p.to_string())),
                part.seeds,
                part.failed,
                part.errored,
                part.seconds,
                esc(&part.covered),
                if part.budget_spent {
                    " (budget spent)"
                } else if part.stopped_at_failure {
                    " (stopped at a failure)"
                } else {
                    ""
                },
                esc(&part.file)
            );
        }
        html.push_str("</table>\n");
        for gap in &scenario.coverage.gaps {
            let class = if scenario.require_fired { "fail" } else { "" };
            let _ = writeln!(html, "<p class=\"{class}\">coverage: {}</p>", esc(gap));
        }
        if scenario.failing_seeds.is_empty() {
            html.push_str("<p class=\"pass\">no failing seed</p>\n");
            continue;
        }
        html.push_str("<table><tr><th>seed</th><th>invariants</th><th>first violation</th><th>replay</th></tr>\n");
        for failing in &scenario.failing_seeds {
            let seed = match has_page(&scenario.scenario, failing.seed) {
                true => {
                    let href = Path::new(&scenario.scenario)
                        .join(failing.seed.to_string())
                        .join("report.html");
                    format!("<a href=\"{}\">{}</a>", esc(&href.display().to_string()), failing.seed)
                }
                false => failing.seed.to_string(),
            };
            let _ = writeln!(
                html,
                "<tr><td>{seed}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
                esc(&failing.invariants.join(", ")),
                esc(&failing.first),
                esc(&failing.replay)
            );
        }
        html.push_str("</table>\n");
    }
    html.push_str("</body></html>\n");
    html
}
