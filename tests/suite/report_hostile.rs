//! Reports stay well-formed when ids and payloads are hostile.
//!
//! A failing run of `smoke.toml` (hostile ids and payloads by default)
//! against a receiver that trims its keys is written by the CLI; then every
//! `report.html` is tokenized as HTML5, `junit.xml` parsed as XML and
//! `summary.md` parsed as CommonMark. No parse error, no element or raw
//! HTML that the run's text injected, every table row whole, and each
//! hostile id the page quotes is there as text, escaped.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{crashsim, stdout};
use html5gum::{DefaultEmitter, Token, Tokenizer};

/// The workflow ids a seed's trace committed events of.
fn workflow_ids(trace: &str) -> BTreeSet<String> {
    trace
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| event["op"] == "commit")
        .flat_map(|event| {
            event["appended"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|appended| appended["workflow_id"].as_str().map(str::to_string))
        })
        .collect()
}

/// HTML escaping as a browser reverses it, for the ids' source form.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

const VOID: [&str; 8] = ["br", "meta", "link", "img", "hr", "input", "wbr", "col"];

/// Tokenizes `page`: no tokenizer error, every element closed in order, the
/// page's own single script only, and the decoded text.
fn check_html(page: &str, name: &str) -> String {
    let mut emitter = DefaultEmitter::default();
    emitter.naively_switch_states(true);
    let mut open: Vec<String> = Vec::new();
    let mut text = String::new();
    let mut scripts = 0;
    for token in Tokenizer::new_with_emitter(page, emitter) {
        match token.expect("infallible") {
            Token::Error(error) => panic!("{name}: HTML tokenizer error {error:?}"),
            Token::StartTag(tag) => {
                let tag_name = String::from_utf8_lossy(&tag.name).into_owned();
                if tag_name == "script" {
                    scripts += 1;
                }
                if tag_name == "a" {
                    for (key, value) in &tag.attributes {
                        let (key, value) = (String::from_utf8_lossy(key), String::from_utf8_lossy(value));
                        assert!(key != "href" || value.starts_with('#'), "{name}: a link out: {value}");
                    }
                }
                if !tag.self_closing && !VOID.contains(&tag_name.as_str()) {
                    open.push(tag_name);
                }
            }
            Token::EndTag(tag) => {
                let tag_name = String::from_utf8_lossy(&tag.name).into_owned();
                assert_eq!(
                    open.pop().as_deref(),
                    Some(tag_name.as_str()),
                    "{name}: </{tag_name}> out of order"
                );
            }
            Token::String(string) => text.push_str(&String::from_utf8_lossy(&string)),
            Token::Comment(_) | Token::Doctype(_) => {}
        }
    }
    assert!(open.is_empty(), "{name}: unclosed {open:?}");
    assert_eq!(scripts, 1, "{name}: only the page's own script");
    text
}

fn check_xml(xml: &str) -> Vec<String> {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut messages = Vec::new();
    loop {
        match reader.read_event().expect("junit.xml is well-formed XML") {
            quick_xml::events::Event::Eof => break,
            quick_xml::events::Event::Start(element) | quick_xml::events::Event::Empty(element) => {
                for attribute in element.attributes() {
                    let attribute = attribute.expect("a well-formed attribute");
                    let value = attribute
                        .normalized_value(quick_xml::XmlVersion::Explicit1_0)
                        .expect("attribute value unescapes");
                    messages.push(value.into_owned());
                }
            }
            quick_xml::events::Event::Text(text) => {
                messages.push(text.decode().expect("text decodes").into_owned());
            }
            _ => {}
        }
    }
    messages
}

/// Parses `markdown`: no raw HTML, and every table row has the header's cells.
fn check_markdown(markdown: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut text = String::new();
    let (mut columns, mut cells) = (0, 0);
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
        match event {
            Event::Html(html) | Event::InlineHtml(html) => panic!("summary.md: raw HTML {html:?}"),
            Event::Start(Tag::Table(alignments)) => columns = alignments.len(),
            Event::Start(Tag::TableHead | Tag::TableRow) => cells = 0,
            Event::Start(Tag::TableCell) => cells += 1,
            Event::End(TagEnd::TableHead | TagEnd::TableRow) => {
                assert_eq!(
                    cells, columns,
                    "summary.md: a table row with {cells} cells, not {columns}"
                )
            }
            Event::Text(part) | Event::Code(part) => text.push_str(&part),
            _ => {}
        }
    }
    text
}

#[test]
fn reports_of_a_run_with_hostile_ids_parse_and_quote_them_as_text() {
    let reports = tempfile::tempdir().expect("temp dir");
    let dir = reports.path().to_str().expect("a UTF-8 path");
    let output = crashsim(&[
        "run",
        "scenarios/smoke.toml",
        "--mutant",
        "key_trim",
        "--seeds",
        "2",
        "--report",
        dir,
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let run_dir = Path::new(dir).join("smoke+key_trim");
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));

    let mut quoted = 0;
    for seed in 0..2 {
        let seed_dir = run_dir.join(seed.to_string());
        let page = read(&seed_dir.join("report.html"));
        let text = check_html(&page, &format!("seed {seed}"));
        // A seed that runs to its budget keeps its trace as trace.jsonl.gz.
        let ids = workflow_ids(&common::read_kept(&seed_dir.join("trace.jsonl")));
        assert!(
            ids.iter().any(|id| id.contains('<')),
            "seed {seed}: hostile ids ran: {ids:?}"
        );
        for id in ids.iter().filter(|id| id.contains(['<', '&', '"'])) {
            // A `<` or `"` in the source is markup; an `&` may be another id's escape.
            if id.contains(['<', '"']) {
                assert!(
                    !page.contains(id.as_str()),
                    "seed {seed}: {id:?} reached the page unescaped"
                );
            }
            if page.contains(&escaped(id)) {
                assert!(
                    text.contains(id.as_str()),
                    "seed {seed}: {id:?} does not read back as text"
                );
                quoted += 1;
            }
        }
    }
    assert!(quoted > 0, "the pages quote some id with markup in it");

    let messages = check_xml(&read(&run_dir.join("junit.xml")));
    assert!(
        messages.iter().any(|message| message.contains("I7")),
        "junit.xml carries the verdicts: {messages:?}"
    );
    let summary = read(&run_dir.join("summary.md"));
    let text = check_markdown(&summary);
    assert!(text.contains("I7 key conflicts surface"), "{text}");
}

/// Every hostile id and payload string, as a Markdown table cell, reads
/// back as exactly itself in one cell.
#[test]
fn every_hostile_string_is_one_markdown_cell_of_itself() {
    use crashsim::workload::{Style, cities, ids};
    let mut prng = crashsim::prng::Prng::derive(0, "workload/ids");
    let mut strings = ids::trip_ids(300, &Style::hostile(), &mut prng);
    strings.extend(cities::cities(&Style::hostile()));
    for string in strings
        .iter()
        .filter(|string| !string.trim_matches([' ', '\t']).is_empty())
    {
        let markdown = format!(
            "| a | b |\n|---|---|\n| {} | x |\n",
            crashsim::report::markdown::cell(string)
        );
        let text = check_markdown(&markdown);
        // Cell text is trimmed by Markdown, as any table cell's is.
        assert_eq!(text, format!("ab{}x", string.trim_matches([' ', '\t'])), "{string:?}");
    }
}
