//! Canonical JSON payloads: flat string maps with keys sorted.
//!
//! Payloads are part of the trace hash and of the idempotency digests, so
//! their bytes must not depend on insertion order or on a `serde_json`
//! feature that another crate in the build graph might switch on
//! (`preserve_order`). Building them from a `BTreeMap` fixes the key order
//! whatever the features.

use std::collections::BTreeMap;

/// A decoded payload: field name to string value.
pub type Fields = BTreeMap<String, String>;

/// Encodes `pairs` as a JSON object whose keys are sorted.
pub fn encode(pairs: &[(&str, &str)]) -> String {
    let map: BTreeMap<&str, &str> = pairs.iter().copied().collect();
    serde_json::to_string(&map).expect("a map of strings always serialises")
}

/// Decodes a flat JSON object of strings.
pub fn decode(text: &str) -> Result<Fields, String> {
    serde_json::from_str(text).map_err(|e| format!("payload {text:?} is not a flat JSON object of strings: {e}"))
}

/// Whether two stored payloads say the same: equal bytes, or both JSON
/// and equal as JSON (`{"trip_id": "x"}` is `{"trip_id":"x"}`). A store
/// may re-encode the JSON it is given (other spacing, other key order):
/// that is no changed payload. Text that is not JSON is compared as bytes.
pub fn same(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    match (
        serde_json::from_str::<serde_json::Value>(a),
        serde_json::from_str::<serde_json::Value>(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The field `name` of `fields`, or an error naming what was missing.
pub fn field<'a>(fields: &'a Fields, name: &str) -> Result<&'a str, String> {
    fields
        .get(name)
        .map(String::as_str)
        .ok_or_else(|| format!("payload lacks the field {name:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sorted_whatever_the_order_given() {
        assert_eq!(encode(&[("z", "1"), ("a", "2")]), r#"{"a":"2","z":"1"}"#);
        let fields = decode(r#"{"b":"x","a":"y"}"#).unwrap();
        assert_eq!(field(&fields, "a"), Ok("y"));
        assert!(field(&fields, "c").is_err());
        assert!(decode("[1]").is_err());
    }

    #[test]
    fn payloads_are_the_same_as_json_whatever_their_spacing_and_key_order() {
        assert!(same(r#"{"trip_id":"x"}"#, r#"{"trip_id": "x"}"#));
        assert!(same(r#"{"a":"1","b":"2"}"#, "{ \"b\" : \"2\",\n \"a\":\"1\" }"));
        assert!(!same(r#"{"trip_id":"x"}"#, r#"{"trip_id":"y"}"#));
        assert!(!same(r#"{"trip_id":"x"}"#, r#"{"trip_id":"x","extra":"1"}"#));
        assert!(same("not json", "not json"));
        assert!(!same("not json", "not  json"));
    }
}
