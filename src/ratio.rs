//! `Ratio`: a probability as an exact fraction, written `"1/50"` in scenario files.
//!
//! Probabilities are never `f64`: a float's rounding differs between
//! formatting and parsing paths, and "0.02" in a file would not round-trip
//! into the same decision stream on every platform. A ratio is drawn with
//! integer arithmetic only (see `prng::Prng::chance`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An exact probability `numerator / denominator`, with `numerator <= denominator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ratio {
    pub numerator: u32,
    pub denominator: u32,
}

/// Why a ratio could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RatioError {
    #[error("expected a ratio like \"1/50\", got {0:?}")]
    Syntax(String),
    #[error("the denominator of {0:?} must be greater than zero")]
    ZeroDenominator(String),
    #[error("{0:?} is greater than 1: a probability cannot exceed 1/1")]
    AboveOne(String),
}

impl Ratio {
    pub const ZERO: Ratio = Ratio {
        numerator: 0,
        denominator: 1,
    };
    pub const ONE: Ratio = Ratio {
        numerator: 1,
        denominator: 1,
    };

    /// Builds a ratio; panics on a zero denominator or a value above one,
    /// which in code (not user input) is a bug.
    pub const fn new(numerator: u32, denominator: u32) -> Ratio {
        assert!(denominator > 0, "ratio with a zero denominator");
        assert!(numerator <= denominator, "ratio above one");
        Ratio { numerator, denominator }
    }

    pub fn is_zero(self) -> bool {
        self.numerator == 0
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.numerator, self.denominator)
    }
}

impl FromStr for Ratio {
    type Err = RatioError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let syntax = || RatioError::Syntax(text.to_string());
        let (numerator, denominator) = text.trim().split_once('/').ok_or_else(syntax)?;
        let numerator: u32 = numerator.trim().parse().map_err(|_| syntax())?;
        let denominator: u32 = denominator.trim().parse().map_err(|_| syntax())?;
        if denominator == 0 {
            return Err(RatioError::ZeroDenominator(text.to_string()));
        }
        if numerator > denominator {
            return Err(RatioError::AboveOne(text.to_string()));
        }
        Ok(Ratio { numerator, denominator })
    }
}

impl Serialize for Ratio {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Ratio {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_and_rejects() {
        assert_eq!("1/50".parse::<Ratio>(), Ok(Ratio::new(1, 50)));
        assert_eq!(" 3 / 4 ".parse::<Ratio>(), Ok(Ratio::new(3, 4)));
        assert_eq!("0/1".parse::<Ratio>(), Ok(Ratio::ZERO));
        assert!(matches!("1/0".parse::<Ratio>(), Err(RatioError::ZeroDenominator(_))));
        assert!(matches!("3/2".parse::<Ratio>(), Err(RatioError::AboveOne(_))));
        assert!(matches!("0.5".parse::<Ratio>(), Err(RatioError::Syntax(_))));
        assert!(matches!("-1/2".parse::<Ratio>(), Err(RatioError::Syntax(_))));
        assert!(matches!("".parse::<Ratio>(), Err(RatioError::Syntax(_))));
    }

    proptest! {
        #[test]
        fn display_round_trips(denominator in 1u32.., numerator_seed: u32) {
            let numerator = (u64::from(numerator_seed) % (u64::from(denominator) + 1)) as u32;
            let ratio = Ratio::new(numerator, denominator);
            prop_assert_eq!(ratio.to_string().parse::<Ratio>(), Ok(ratio));
        }
    }
}
