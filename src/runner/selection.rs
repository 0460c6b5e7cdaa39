//! Which seeds a run takes: a range from a start seed, bounded or open-ended
//! (a time budget decides where it stops), and one job's share of it.
//!
//! A share is nextest's `count:K/N`: the seeds of the range taken round
//! robin, job K (from 1) taking offsets K−1, K−1+N, K−1+2N, … from the
//! start. N jobs together take every seed exactly once, whatever the range's
//! length, and each job's share is the same on any machine. Round robin
//! (not blocks) is what lets an open-ended range be shared: every job's
//! share starts at the range's start, so jobs under one time budget cover a
//! near-prefix of the range together, and each one a prefix of its share.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Job `index` (from 1) of `total`, as `count:K/N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Partition {
    pub index: u64,
    pub total: u64,
}

impl Partition {
    /// Reads `count:K/N` (1 ≤ K ≤ N).
    pub fn parse(text: &str) -> Result<Partition, String> {
        let spelling = "partitions are spelled count:K/N, job K (from 1) of N";
        let Some(rest) = text.strip_prefix("count:") else {
            return Err(match text.split_once(':') {
                Some(("hash", _)) => format!(
                    "{text:?}: hash partitions are not offered: count:K/N is already stable for a seed range \
                     (a seed's job depends only on its offset from --start-seed)"
                ),
                _ => format!("{text:?}: {spelling}"),
            });
        };
        let parsed = rest
            .split_once('/')
            .and_then(|(k, n)| Some((k.trim().parse::<u64>().ok()?, n.trim().parse::<u64>().ok()?)));
        match parsed {
            Some((index, total)) if total >= 1 && (1..=total).contains(&index) => Ok(Partition { index, total }),
            Some((index, total)) => Err(format!(
                "{text:?}: job {index} of {total}: K must be from 1 to N, and N at least 1"
            )),
            None => Err(format!("{text:?}: {spelling}")),
        }
    }

    /// Whether the seed `offset` seeds after the start is this job's.
    pub fn takes(self, offset: u64) -> bool {
        offset % self.total == self.index - 1
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "count:{}/{}", self.index, self.total)
    }
}

impl Serialize for Partition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Partition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Partition, D::Error> {
        let text = String::deserialize(deserializer)?;
        Partition::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The seeds of one run: `count` seeds from `start` (all the seeds from
/// `start` on when `None`), or this job's share of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    pub start: u64,
    pub count: Option<u64>,
    pub partition: Option<Partition>,
}

impl Selection {
    /// Exactly one seed.
    pub fn one(seed: u64) -> Selection {
        Selection {
            start: seed,
            count: Some(1),
            partition: None,
        }
    }

    /// The `n`-th seed (from 0) of this selection, if it has one.
    pub fn nth(&self, n: u64) -> Option<u64> {
        let (first, step) = self.share();
        let offset = n.checked_mul(step)?.checked_add(first)?;
        if self.count.is_some_and(|count| offset >= count) {
            return None;
        }
        self.start.checked_add(offset)
    }

    /// How many seeds it has (`None`: open-ended, bounded only by `u64`).
    pub fn len(&self) -> Option<u64> {
        let (first, step) = self.share();
        self.count.map(|count| match count > first {
            true => (count - first - 1) / step + 1,
            false => 0,
        })
    }

    /// Whether it has no seed at all (a share of a range shorter than N).
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// The range it is a share of, in words: `0..=99`, `from 0 on`.
    pub fn range(&self) -> String {
        match self.count {
            Some(1) => self.start.to_string(),
            Some(count) => format!("{}..={}", self.start, self.start.saturating_add(count - 1)),
            None => format!("{}.. (open-ended)", self.start),
        }
    }

    /// Seeds (ascending, all of this selection) as ranges, strided by the
    /// partition: `1..=97 by 4, 105`.
    pub fn ranges(&self, seeds: impl IntoIterator<Item = u64>) -> String {
        strided_ranges(seeds, self.share().1)
    }

    fn share(&self) -> (u64, u64) {
        self.partition
            .map_or((0, 1), |partition| (partition.index - 1, partition.total))
    }
}

/// Ascending seeds as ranges of step `step`: "0..=41, 43" for step 1,
/// "1..=97 by 4" for step 4.
pub fn strided_ranges(seeds: impl IntoIterator<Item = u64>, step: u64) -> String {
    let mut parts: Vec<(u64, u64)> = Vec::new();
    for seed in seeds {
        match parts.last_mut() {
            Some((_, last)) if last.checked_add(step) == Some(seed) => *last = seed,
            _ => parts.push((seed, seed)),
        }
    }
    parts
        .iter()
        .map(|&(first, last)| match (first == last, step) {
            (true, _) => first.to_string(),
            (false, 1) => format!("{first}..={last}"),
            (false, _) if last - first == step => format!("{first}, {last}"),
            (false, _) => format!("{first}..={last} by {step}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(selection: &Selection) -> Vec<u64> {
        (0..).map_while(|n| selection.nth(n)).collect()
    }

    #[test]
    fn partitions_are_read_in_nextests_spelling() {
        assert_eq!(Partition::parse("count:2/4"), Ok(Partition { index: 2, total: 4 }));
        for bad in ["count:0/4", "count:5/4", "count:1/0", "count:a/4", "2/4", "count:2"] {
            assert!(Partition::parse(bad).is_err(), "{bad}");
        }
        assert!(Partition::parse("hash:1/2").unwrap_err().contains("not offered"));
        let text = serde_json::to_string(&Partition { index: 3, total: 4 }).unwrap();
        assert_eq!(text, "\"count:3/4\"");
        assert_eq!(serde_json::from_str::<Partition>(&text).unwrap().index, 3);
    }

    #[test]
    fn n_shares_take_every_seed_of_the_range_once() {
        for (start, count, total) in [(0, 10, 4), (7, 3, 4), (5, 1, 1), (100, 101, 3)] {
            let mut seen: Vec<u64> = (1..=total)
                .flat_map(|index| {
                    let share = Selection {
                        start,
                        count: Some(count),
                        partition: Some(Partition { index, total }),
                    };
                    let seeds = all(&share);
                    assert_eq!(share.len(), Some(seeds.len() as u64));
                    seeds
                })
                .collect();
            seen.sort_unstable();
            assert_eq!(seen, (start..start + count).collect::<Vec<_>>());
        }
    }

    #[test]
    fn an_open_ended_share_strides_from_the_start() {
        let share = Selection {
            start: 10,
            count: None,
            partition: Some(Partition { index: 2, total: 4 }),
        };
        assert_eq!((0..3).map(|n| share.nth(n).unwrap()).collect::<Vec<_>>(), [11, 15, 19]);
        assert_eq!(share.len(), None);
        let last = Selection {
            start: u64::MAX,
            count: None,
            partition: None,
        };
        assert_eq!((last.nth(0), last.nth(1)), (Some(u64::MAX), None));
    }

    #[test]
    fn strided_seeds_read_as_ranges() {
        assert_eq!(strided_ranges([1, 5, 9, 13, 21], 4), "1..=13 by 4, 21");
        assert_eq!(strided_ranges([0, 1, 2, 4], 1), "0..=2, 4");
        assert_eq!(strided_ranges([3, 7], 4), "3, 7");
        assert_eq!(strided_ranges([], 4), "");
    }
}
