//! Payload strings: the cities trips go to, polite or hostile.
//!
//! A city travels inside every payload of its trip (`trip_requested`,
//! `book_flight`, `book_hotel`) as a JSON string, so a hostile city tests
//! how a store keeps payloads: byte for byte, or re-encoded, trimmed,
//! case-folded, normalized, truncated or built by hand.

use super::style::{Class, Style};

/// The polite cities.
pub const PLAIN: [&str; 8] = ["Lima", "Oslo", "Rome", "Kyiv", "Pune", "Lagos", "Quito", "Hanoi"];

/// The cities of one hostile class.
fn hostile(class: Class) -> Vec<String> {
    let words: &[&str] = match class {
        Class::Case => &["OSLO", "oslo", "São PAULO", "rOME"],
        Class::Space => &["  Oslo", "Rome  ", "Ho Chi  Minh City", "\tLima", "Quito\u{a0}", " "],
        Class::Unicode => &[
            "Z\u{fc}rich",
            "Zu\u{308}rich",
            "東京",
            "Київ",
            "Reykjavík",
            "🏝 Bali",
            "ｏｓａｋａ",
            "Ro\u{200b}me",
        ],
        Class::Long => &[],
        Class::Punct => &[
            "O'Hare",
            "\"Big\" Apple",
            "C:\\Temp\\",
            "100% Lima_",
            "a:b:c",
            "{\"city\":\"Oslo\"}",
            "pipe|city",
            "back`tick",
            "",
        ],
        Class::Markup => &[
            "<b>Rome</b>",
            "Rome & Milan",
            "]]>",
            "<!-- x -->",
            "&amp;",
            "<script>x</script>",
        ],
    };
    let mut cities: Vec<String> = words.iter().map(|word| word.to_string()).collect();
    if class == Class::Long {
        cities.push("Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch".to_string());
        cities.push(format!("Long{}", "-ville".repeat(100)));
    }
    cities
}

/// The cities a run's trips are drawn from, in `style`: the polite ones,
/// then each class's.
pub fn cities(style: &Style) -> Vec<String> {
    let mut cities: Vec<String> = PLAIN.iter().map(|city| city.to_string()).collect();
    for class in style.classes() {
        cities.extend(hostile(class));
    }
    cities
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_is_the_polite_eight_and_each_class_adds_its_own() {
        assert_eq!(cities(&Style::plain()), PLAIN);
        let all = cities(&Style::hostile());
        for class in Class::ALL {
            assert!(!hostile(class).is_empty(), "{class}");
            assert!(hostile(class).iter().all(|city| all.contains(city)));
        }
        assert!(all.iter().any(|city| city.len() > 500));
    }
}
