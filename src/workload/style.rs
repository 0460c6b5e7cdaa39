//! `Style`: which classes of hostile text a run's workflow ids or payload
//! strings carry. Written `"plain"`, `"hostile"` (every class) or a list of
//! class names in scenario files.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

/// A kind of text that real identifiers and payloads have and polite test
/// data lacks. Each class names the store mistakes it exposes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// Mixed case, and ids that differ only by case (`Trip-Ab`, `trip-ab`,
    /// `TRIP-AB`; `Straße`, `STRASSE`): a store that folds case merges them.
    Case,
    /// Leading, trailing, doubled and non-breaking spaces (`" trip-s1"`,
    /// `"trip-s1 "`): a store that trims or collapses whitespace merges them.
    Space,
    /// Non-ASCII text, and the same visible name in NFC and NFD (`café`
    /// with U+00E9 or with `e` + U+0301), fullwidth and zero-width
    /// characters: a store that normalizes merges them, one that counts
    /// bytes as characters cuts them.
    Unicode,
    /// Very long ids (over 255 bytes, and over 1 KiB) that differ only at
    /// the end: a store that truncates merges them.
    Long,
    /// Quotes, backslashes, `%` and `_` (LIKE wildcards), `|`, and the `:`
    /// that `command_id` uses as its separator: a store that builds SQL or
    /// JSON by hand, matches with LIKE, or splits a command id at its first
    /// `:` goes wrong.
    Punct,
    /// `<`, `>`, `&`, entities and comment or CDATA ends: a store (or a
    /// report) that decodes or strips markup merges or breaks them.
    Markup,
}

impl Class {
    pub const ALL: [Class; 6] = [
        Class::Case,
        Class::Space,
        Class::Unicode,
        Class::Long,
        Class::Punct,
        Class::Markup,
    ];

    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Class::Case => "case",
            Class::Space => "space",
            Class::Unicode => "unicode",
            Class::Long => "long",
            Class::Punct => "punct",
            Class::Markup => "markup",
        }
    }

    pub fn from_name(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|class| class.name() == name)
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The classes of hostile text in use; none is `plain`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Style(BTreeSet<Class>);

impl Style {
    /// Polite text only: `trip-007`, `Oslo`.
    pub fn plain() -> Style {
        Style::default()
    }

    /// Every class.
    pub fn hostile() -> Style {
        Style(Class::ALL.into_iter().collect())
    }

    pub fn of(classes: impl IntoIterator<Item = Class>) -> Style {
        Style(classes.into_iter().collect())
    }

    pub fn is_plain(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, class: Class) -> bool {
        self.0.contains(&class)
    }

    /// The classes, in `Class::ALL` order.
    pub fn classes(&self) -> impl Iterator<Item = Class> + '_ {
        self.0.iter().copied()
    }

    /// Swarm mode: each class kept with probability 1/2 (drawn from `prng`,
    /// in `Class::ALL` order), so that some seeds carry one kind of hostile
    /// text and others several. May come out plain.
    pub fn swarm(&self, prng: &mut crate::prng::Prng) -> Style {
        let mut kept = BTreeSet::new();
        for class in self.classes() {
            if prng.chance(crate::ratio::Ratio::new(1, 2)) {
                kept.insert(class);
            }
        }
        Style(kept)
    }
}

impl fmt::Display for Style {
    /// `plain`, `hostile`, or the classes joined with `+` (`case+space`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_plain() {
            return f.write_str("plain");
        }
        if *self == Style::hostile() {
            return f.write_str("hostile");
        }
        let names: Vec<&str> = self.classes().map(Class::name).collect();
        f.write_str(&names.join("+"))
    }
}

impl Serialize for Style {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.is_plain() || *self == Style::hostile() {
            return serializer.collect_str(self);
        }
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for class in self.classes() {
            seq.serialize_element(class.name())?;
        }
        seq.end()
    }
}

const EXPECTED: &str = "\"plain\", \"hostile\" or a list of classes (case, space, unicode, long, punct, markup)";

fn unknown_class<E: de::Error>(name: &str) -> E {
    E::custom(format!(
        "unknown class {name:?}: expected one of case, space, unicode, long, punct, markup"
    ))
}

struct StyleVisitor;

impl<'de> Visitor<'de> for StyleVisitor {
    type Value = Style;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(EXPECTED)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Style, E> {
        match text {
            "plain" => Ok(Style::plain()),
            "hostile" => Ok(Style::hostile()),
            other => match Class::from_name(other) {
                Some(class) => Ok(Style::of([class])),
                None => Err(E::custom(format!("expected {EXPECTED}, got {other:?}"))),
            },
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Style, A::Error> {
        let mut classes = BTreeSet::new();
        while let Some(name) = seq.next_element::<String>()? {
            classes.insert(Class::from_name(&name).ok_or_else(|| unknown_class(&name))?);
        }
        Ok(Style(classes))
    }
}

impl<'de> Deserialize<'de> for Style {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Style, D::Error> {
        deserializer.deserialize_any(StyleVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, Serialize, PartialEq)]
    struct Holder {
        ids: Style,
    }

    fn parse(text: &str) -> Result<Style, String> {
        toml::from_str::<Holder>(text)
            .map(|holder| holder.ids)
            .map_err(|error| error.to_string())
    }

    #[test]
    fn parses_plain_hostile_one_class_and_lists() {
        assert_eq!(parse("ids = \"plain\""), Ok(Style::plain()));
        assert_eq!(parse("ids = \"hostile\""), Ok(Style::hostile()));
        assert_eq!(parse("ids = \"case\""), Ok(Style::of([Class::Case])));
        assert_eq!(
            parse("ids = [\"space\", \"case\"]"),
            Ok(Style::of([Class::Case, Class::Space]))
        );
        assert_eq!(parse("ids = []"), Ok(Style::plain()));
        assert!(parse("ids = \"rude\"").unwrap_err().contains("\"rude\""));
        assert!(parse("ids = [\"case\", \"loud\"]").unwrap_err().contains("\"loud\""));
        assert!(parse("ids = 3").is_err());
    }

    #[test]
    fn round_trips_through_toml() {
        for style in [
            Style::plain(),
            Style::hostile(),
            Style::of([Class::Long]),
            Style::of([Class::Unicode, Class::Markup]),
        ] {
            let text = toml::to_string(&Holder { ids: style.clone() }).unwrap();
            assert_eq!(parse(&text), Ok(style), "{text}");
        }
        assert_eq!(Style::of([Class::Case, Class::Punct]).to_string(), "case+punct");
    }

    #[test]
    fn swarm_draws_subsets_deterministically() {
        let hostile = Style::hostile();
        let mut seen = BTreeSet::new();
        for seed in 0..40 {
            let drawn = hostile.swarm(&mut crate::prng::Prng::derive(seed, "swarm/ids"));
            assert!(drawn.classes().all(|class| hostile.contains(class)));
            assert_eq!(drawn, hostile.swarm(&mut crate::prng::Prng::derive(seed, "swarm/ids")));
            seen.insert(drawn);
        }
        assert!(seen.len() > 10, "subsets vary by seed");
        assert!(Style::plain().swarm(&mut crate::prng::Prng::derive(0, "x")).is_plain());
    }
}
