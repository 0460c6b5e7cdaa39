//! Workflow ids: polite (`trip-007`) or hostile.
//!
//! Hostile ids come in families: ids that a store which folds case, trims,
//! normalizes Unicode, truncates, matches with LIKE, splits at `:` or
//! decodes markup would take for one another, yet are distinct byte
//! strings and so distinct workflows. A family is always whole in a run
//! (unless the trip count cuts the last one), so every collision a class
//! stands for is in the same run. Families are taken from the classes in
//! turn, in an order drawn per seed, with a polite id after each round, and
//! the list for `n` trips is the first `n` of the list for more: shrinking
//! the trip count keeps a prefix of the same ids.

use std::collections::BTreeSet;

use super::style::{Class, Style};
use crate::prng::Prng;

/// The polite id of trip `index` of `count`: `trip-007`.
pub fn plain(index: u32, count: u32) -> String {
    let width = count.saturating_sub(1).to_string().len().max(3);
    format!("trip-{index:0width$}")
}

/// `count` distinct workflow ids in `style`, from the seed's `prng`.
pub fn trip_ids(count: u32, style: &Style, prng: &mut Prng) -> Vec<String> {
    if style.is_plain() {
        return (0..count).map(|index| plain(index, count)).collect();
    }
    let mut classes: Vec<Class> = style.classes().collect();
    prng.shuffle(&mut classes);
    let count = count as usize;
    let mut ids: Vec<String> = Vec::with_capacity(count);
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut push = |id: String, ids: &mut Vec<String>| {
        if ids.len() < count && seen.insert(id.clone()) {
            ids.push(id);
        }
    };
    let mut family = 0u32;
    while ids.len() < count {
        for class in &classes {
            for id in members(*class, family, prng) {
                push(id, &mut ids);
            }
            family += 1;
        }
        push(format!("trip-{family:03}"), &mut ids);
    }
    ids
}

/// The ids of family number `n` of `class` (one of the class's shapes,
/// drawn from `prng`).
fn members(class: Class, n: u32, prng: &mut Prng) -> Vec<String> {
    let shape = prng.below(4);
    let mut ids: Vec<String> = match (class, shape) {
        (Class::Case, 0) => vec![format!("Trip-Ab{n}"), format!("trip-ab{n}"), format!("TRIP-AB{n}")],
        (Class::Case, 1) => vec![format!("Straße-{n}"), format!("STRASSE-{n}"), format!("strasse-{n}")],
        (Class::Case, 2) => vec![
            format!("İstanbul-{n}"),
            format!("istanbul-{n}"),
            format!("ISTANBUL-{n}"),
        ],
        (Class::Case, _) => vec![format!("camelCase{n}"), format!("CamelCase{n}")],
        (Class::Space, 0) => vec![format!(" trip-s{n}"), format!("trip-s{n}"), format!("trip-s{n} ")],
        (Class::Space, 1) => vec![
            format!("trip s{n}"),
            format!("trip  s{n}"),
            format!("trip\u{a0}s{n}"),
            format!("trip s{n} "),
        ],
        (Class::Space, 2) => vec![format!("\ttrip-s{n}"), format!("trip-s{n}\u{a0}"), format!("trip-s{n}")],
        (Class::Space, _) => vec![format!("  trip-s{n}  "), format!("trip-s{n}")],
        // NFC and NFD of the same name; U+2126 OHM SIGN and U+03A9 (one NFC form).
        (Class::Unicode, 0) => vec![format!("caf\u{e9}-{n}"), format!("cafe\u{301}-{n}")],
        (Class::Unicode, 1) => vec![
            format!("\u{2126}-{n}"),
            format!("\u{3a9}-{n}"),
            format!("Zu\u{308}rich-{n}"),
        ],
        // Fullwidth (NFKC folds it) and zero-width (a stripper removes it).
        (Class::Unicode, 2) => vec![
            format!("ｔｒｉｐ-u{n}"),
            format!("trip-u{n}"),
            format!("trip\u{200b}-u{n}"),
            format!("A\u{30a}ngstr\u{f6}m-{n}"),
            format!("\u{c5}ngstr\u{f6}m-{n}"),
        ],
        (Class::Unicode, _) => vec![
            format!("旅行-{n}"),
            format!("Київ-{n}"),
            format!("✈️-{n}"),
            format!("رحلة-{n}"),
            format!("n\u{303}o-{n}"),
            format!("\u{f1}o-{n}"),
        ],
        // Over 255 bytes, differing only at the end.
        (Class::Long, 0..=2) => {
            let stem = format!("trip-{n}-{}", "long".repeat(64));
            vec![format!("{stem}-a"), format!("{stem}-b")]
        }
        // Over 1 KiB, multibyte: a byte-count limit cuts inside a character.
        (Class::Long, _) => {
            let stem = format!("trip-{n}-{}", "é".repeat(520));
            vec![format!("{stem}1"), format!("{stem}2")]
        }
        (Class::Punct, 0) => vec![
            format!("o'brien-{n}"),
            format!("o\"brien\"-{n}"),
            format!("o`brien`-{n}"),
            format!("o\\brien-{n}"),
        ],
        // `LIKE '50%_off-n'` matches all three.
        (Class::Punct, 1) => vec![format!("50%_off-{n}"), format!("50%-off-{n}"), format!("50x_off-{n}")],
        // Command ids `trip:n:1:0`, `trip:n:1:1:0`: split at the first `:` and they mix.
        (Class::Punct, 2) => vec![format!("trip:{n}"), format!("trip:{n}:1"), format!("trip:{n}:1:0")],
        (Class::Punct, _) => vec![
            format!("a|b-{n}"),
            format!("trip%20{n}"),
            format!("trip {n}"),
            format!("semi;{n}--"),
        ],
        (Class::Markup, 0) => vec![format!("<b>m-{n}</b>"), format!("m-{n}")],
        (Class::Markup, 1) => vec![format!("a&amp;b-{n}"), format!("a&b-{n}"), format!("a&#38;b-{n}")],
        (Class::Markup, 2) => vec![
            format!("<script>alert({n})</script>"),
            format!("]]>-{n}"),
            format!("--><!--{n}"),
        ],
        (Class::Markup, _) => vec![
            format!("<a href=\"x\">{n}</a>"),
            format!("&lt;{n}&gt;"),
            format!("<{n}>"),
        ],
    };
    // Every family of these two classes also carries all their characters at once.
    match class {
        Class::Punct => ids.push(format!("mix{n}:50%_'\"\\|`;")),
        Class::Markup => ids.push(format!("<i>&amp;{n}</i>")),
        _ => {}
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_normalization::UnicodeNormalization;

    fn ids(count: u32, style: &Style, seed: u64) -> Vec<String> {
        trip_ids(count, style, &mut Prng::derive(seed, "workload/ids"))
    }

    #[test]
    fn plain_ids_are_the_polite_ones() {
        assert_eq!(ids(3, &Style::plain(), 0), ["trip-000", "trip-001", "trip-002"]);
        assert_eq!(ids(1001, &Style::plain(), 0)[7], "trip-0007");
    }

    #[test]
    fn hostile_ids_are_distinct_and_a_shorter_list_is_a_prefix() {
        for seed in 0..20 {
            let long = ids(200, &Style::hostile(), seed);
            assert_eq!(long.len(), 200);
            assert_eq!(long.iter().collect::<BTreeSet<_>>().len(), 200, "distinct");
            for count in [0, 1, 2, 7, 50] {
                assert_eq!(ids(count, &Style::hostile(), seed), long[..count as usize]);
            }
        }
    }

    #[test]
    fn fifty_hostile_ids_collide_under_every_folding() {
        let fold = |ids: &[String], f: &dyn Fn(&str) -> String| {
            let folded: BTreeSet<String> = ids.iter().map(|id| f(id)).collect();
            folded.len() < ids.len()
        };
        for seed in 0..20 {
            let ids = ids(50, &Style::hostile(), seed);
            assert!(fold(&ids, &|id| id.to_lowercase()), "case, seed {seed}");
            assert!(fold(&ids, &|id| id.trim().to_string()), "trim, seed {seed}");
            assert!(fold(&ids, &|id| id.nfc().collect()), "nfc, seed {seed}");
            assert!(ids.iter().any(|id| id.len() > 255), "long, seed {seed}");
            assert!(ids.iter().any(|id| id.contains(':')), "colon, seed {seed}");
            assert!(ids.iter().any(|id| id.contains('<')), "markup, seed {seed}");
            assert!(ids.iter().any(|id| id.contains('%')), "wildcard, seed {seed}");
        }
    }

    #[test]
    fn one_class_gives_only_its_own_kind_and_polite_ids() {
        let ids = ids(30, &Style::of([Class::Space]), 3);
        assert!(ids.iter().all(|id| id.is_ascii() || id.contains('\u{a0}')));
        assert!(ids.iter().any(|id| id.trim() != id));
        assert!(ids.iter().all(|id| id.to_lowercase() == *id));
    }
}
