//! Seeds: parsing and printing.
//!
//! A seed is accepted in decimal (`7301946152`), in hex (`0x5eed`), or as a
//! 40-hex-digit git commit hash, whose first 16 digits become the seed (so a
//! CI job can seed a run from the commit it tests, as TigerBeetle's VOPR does).

/// Parses a seed in any of the accepted forms.
pub fn parse_seed(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let bad =
        || format!("invalid seed {text:?}: expected a decimal number, 0x-prefixed hex, or a 40-digit commit hash");
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        return u64::from_str_radix(&hex.replace('_', ""), 16).map_err(|_| bad());
    }
    if text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return u64::from_str_radix(&text[..16], 16).map_err(|_| bad());
    }
    text.replace('_', "").parse::<u64>().map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_decimal_hex_and_commit_hashes() {
        assert_eq!(parse_seed("42"), Ok(42));
        assert_eq!(parse_seed("1_000"), Ok(1000));
        assert_eq!(parse_seed("0x5eed"), Ok(0x5eed));
        assert_eq!(parse_seed("0X5EED"), Ok(0x5eed));
        assert_eq!(parse_seed("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(
            parse_seed("0123456789abcdef0123456789abcdef01234567"),
            Ok(0x0123_4567_89ab_cdef)
        );
        for bad in ["", "-1", "0x", "0xg", "seed", "18446744073709551616"] {
            assert!(parse_seed(bad).is_err(), "{bad}");
        }
    }
}
