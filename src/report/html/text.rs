//! Small text helpers for the page: escaping, anchor ids, links.
//!
//! Everything that comes from a run (ids, payloads, results, checker
//! messages) goes through `Esc` before it reaches the page: payloads hold
//! quotes and braces, and a mutant may use any text as a key.

use std::fmt;

/// Text escaped for HTML element content and quoted attribute values
/// (also inside inline SVG, which the HTML parser reads with the same rules).
pub struct Esc<'a>(pub &'a str);

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(['&', '<', '>', '"', '\'']) {
            f.write_str(&rest[..at])?;
            f.write_str(match rest.as_bytes()[at] {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                _ => "&#39;",
            })?;
            rest = &rest[at + 1..];
        }
        f.write_str(rest)
    }
}

/// An id (workflow, command, key) as the page shows it: as messages show it
/// (`model::Shown`: quoted when it holds anything but tame characters, so
/// whitespace at its ends is seen; capped in length, both ends kept), then
/// escaped.
pub struct Id<'a>(pub &'a str);

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Esc(&crate::model::Shown(self.0).to_string()).fmt(f)
    }
}

/// `text` escaped, as a `String`.
pub fn esc(text: &str) -> String {
    Esc(text).to_string()
}

/// An element id for `text` under `prefix`: ASCII letters, digits, `-`, `.`
/// and `:` are kept and every other byte becomes `_xx`, so distinct texts
/// give distinct ids and an id never needs escaping.
pub fn anchor(prefix: &str, text: &str) -> String {
    let mut id = String::with_capacity(prefix.len() + text.len() + 1);
    id.push_str(prefix);
    id.push('-');
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b':') {
            id.push(char::from(byte));
        } else {
            id.push_str(&format!("_{byte:02x}"));
        }
    }
    id
}

/// The anchor of a command's row in the lifecycle table.
pub fn command_anchor(command_id: &str) -> String {
    anchor("cmd", command_id)
}

/// The anchor of the `index`-th violation (0-based; shown 1-based).
pub fn violation_anchor(index: usize) -> String {
    format!("v{}", index + 1)
}

/// The anchor of a violation tick's marker on the timeline.
pub fn tick_anchor(tick: u64) -> String {
    format!("t{tick}")
}

/// A link to a command's lifecycle row, showing the id.
pub fn command_link(command_id: &str) -> String {
    format!(
        "<a class=\"id\" href=\"#{}\">{}</a>",
        command_anchor(command_id),
        Id(command_id)
    )
}

/// A link to a tick on the timeline.
pub fn tick_link(tick: u64) -> String {
    format!("<a href=\"#{}\">{tick}</a>", tick_anchor(tick))
}

/// A signed number as people write it: "+7", "−5" (a minus sign), "0".
pub fn signed(value: i64) -> String {
    match value {
        0 => "0".to_string(),
        v if v > 0 => format!("+{v}"),
        v => format!("−{}", v.unsigned_abs()),
    }
}

/// At most `max` characters of `text`, with an ellipsis if cut.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc(r#"<b>"x" & 'y'</b> {"k":"v"}"#),
            "&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/b&gt; {&quot;k&quot;:&quot;v&quot;}"
        );
        assert_eq!(esc("plain"), "plain");
        assert_eq!(esc("é → ü"), "é → ü");
    }

    #[test]
    fn ids_show_their_whitespace_and_keep_a_bounded_length() {
        assert_eq!(Id("trip-1:1:0").to_string(), "trip-1:1:0");
        assert_eq!(Id(" trip-1:1:0").to_string(), "&quot; trip-1:1:0&quot;");
        assert_eq!(Id("t<b>\t").to_string(), "&quot;t&lt;b&gt;\\t&quot;");
        let long = Id(&format!("{}:1:0", "w".repeat(500))).to_string();
        assert!(long.contains("…[504 chars #") && long.ends_with(":1:0"), "{long}");
        assert!(long.chars().count() < 80, "{long}");
    }

    #[test]
    fn anchors_are_safe_and_distinct() {
        assert_eq!(command_anchor("trip-006:3:0"), "cmd-trip-006:3:0");
        assert_eq!(anchor("k", "a b\"<"), "k-a_20b_22_3c");
        assert_ne!(anchor("k", "a_20"), anchor("k", "a "));
    }

    #[test]
    fn signs_numbers_with_a_minus_sign() {
        assert_eq!(signed(7), "+7");
        assert_eq!(signed(-12), "−12");
        assert_eq!(signed(0), "0");
        assert_eq!(signed(i64::MIN), "−9223372036854775808");
    }

    #[test]
    fn clips_on_characters() {
        assert_eq!(clip("ééé", 2), "éé…");
        assert_eq!(clip("ab", 2), "ab");
    }
}
