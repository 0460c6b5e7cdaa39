//! Near-miss keys: an idempotency key changed in a way that a careless
//! store ignores, yet a different key, and so a different operation.
//!
//! After a confirmed command, the key-conflict prober may send the same
//! request (the same kind and payload) under a near miss of its key: the
//! key in another case, with a leading or trailing space, or in the other
//! Unicode normalization form. A receiver that compares keys exactly
//! treats it as a new operation and applies it; one that folds case, trims
//! or normalizes answers with the original command's result (or calls it a
//! conflict), which is I7's to report.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

/// How a near-miss key differs from the key it is near.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NearMiss {
    /// Every cased letter in the other case.
    Case,
    /// A space appended.
    TrailingSpace,
    /// A space prepended.
    LeadingSpace,
    /// The other normalization form: NFC if the key is not in NFC, else NFD.
    Normalization,
}

impl NearMiss {
    pub const ALL: [NearMiss; 4] = [
        NearMiss::Case,
        NearMiss::TrailingSpace,
        NearMiss::LeadingSpace,
        NearMiss::Normalization,
    ];

    pub fn name(self) -> &'static str {
        match self {
            NearMiss::Case => "case",
            NearMiss::TrailingSpace => "trailing_space",
            NearMiss::LeadingSpace => "leading_space",
            NearMiss::Normalization => "normalization",
        }
    }

    /// What the change is, for messages: "in another case".
    pub fn describe(self) -> &'static str {
        match self {
            NearMiss::Case => "in another case",
            NearMiss::TrailingSpace => "with a trailing space",
            NearMiss::LeadingSpace => "with a leading space",
            NearMiss::Normalization => "in another Unicode normalization form",
        }
    }

    /// The near miss of `key`, if this change changes it.
    pub fn apply(self, key: &str) -> Option<String> {
        let near: String = match self {
            NearMiss::Case => key
                .chars()
                .flat_map(|c| {
                    let flipped: Vec<char> = if c.is_lowercase() {
                        c.to_uppercase().collect()
                    } else {
                        c.to_lowercase().collect()
                    };
                    flipped
                })
                .collect(),
            NearMiss::TrailingSpace => format!("{key} "),
            NearMiss::LeadingSpace => format!(" {key}"),
            NearMiss::Normalization => {
                let nfc: String = key.nfc().collect();
                if nfc != key { nfc } else { key.nfd().collect() }
            }
        };
        (near != key).then_some(near)
    }
}

/// Whether `key` could be the `command_id` of a command of one of
/// `workflows` (`{workflow_id}:{seq}:{index}`, read from the right, since
/// a workflow id may itself hold `:`).
pub fn is_command_id_of(key: &str, workflows: &BTreeSet<String>) -> bool {
    crate::model::parse_command_id(key).is_some_and(|(workflow, _, _)| workflows.contains(workflow))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_change_changes_what_it_says_or_nothing() {
        assert_eq!(NearMiss::Case.apply("trip-007:1:0").as_deref(), Some("TRIP-007:1:0"));
        assert_eq!(NearMiss::Case.apply("Trip-Ab1:2:0").as_deref(), Some("tRIP-aB1:2:0"));
        assert_eq!(NearMiss::Case.apply("42:1:0"), None);
        assert_eq!(NearMiss::TrailingSpace.apply("k").as_deref(), Some("k "));
        assert_eq!(NearMiss::LeadingSpace.apply("k").as_deref(), Some(" k"));
        assert_eq!(
            NearMiss::Normalization.apply("caf\u{e9}:1:0").as_deref(),
            Some("cafe\u{301}:1:0")
        );
        assert_eq!(
            NearMiss::Normalization.apply("cafe\u{301}:1:0").as_deref(),
            Some("caf\u{e9}:1:0")
        );
        assert_eq!(NearMiss::Normalization.apply("trip-007:1:0"), None);
    }

    #[test]
    fn command_ids_are_read_from_the_right() {
        let workflows: BTreeSet<String> = ["trip:1", "a b"].into_iter().map(String::from).collect();
        assert!(is_command_id_of("trip:1:3:0", &workflows));
        assert!(is_command_id_of("a b:1:0", &workflows));
        assert!(!is_command_id_of("trip:1:0", &workflows), "workflow `trip` is not one");
        assert!(!is_command_id_of("a b:1:0 ", &workflows));
        assert!(!is_command_id_of("a b::0", &workflows));
        assert!(!is_command_id_of("nothing", &workflows));
    }
}
