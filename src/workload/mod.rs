//! The workload's text: workflow ids and payload strings, polite or
//! hostile, and near-miss keys for the key-conflict prober.
//!
//! Real ids come from users and other systems: mixed case, ids that differ
//! only by case, Unicode in two normalization forms, spaces at either end,
//! very long ids, quotes, LIKE wildcards, the `:` that `command_id` uses as
//! its separator, markup. Store code that trims, folds case, splits on the
//! first `:` or matches with LIKE is wrong on them, and polite ids
//! (`trip-007`) cannot tell. `[workload] ids` and `payloads` choose the
//! classes (`style.rs`); `ids.rs` and `cities.rs` make the text;
//! `near_miss.rs` makes the keys a careless receiver confuses.

pub mod cities;
pub mod ids;
pub mod near_miss;
pub mod style;

pub use near_miss::NearMiss;
pub use style::{Class, Style};
