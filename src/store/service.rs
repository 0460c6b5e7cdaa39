//! What the downstream services do: the business effect behind each command
//! kind, and the digest that identifies a request's core parameters.
//!
//! Results carry the effect's id (`tok-7`, `FL12`), so two effects of one
//! command give two different results and the workflow's log shows which one
//! it believed. Whether a hotel booking fails is decided from the request
//! alone (trip and city), so the same request always fails the same way.

use sha2::{Digest, Sha256};

use super::{Result, StoreError};
use crate::ratio::Ratio;
use crate::workflow::payload;
use crate::workflow::trip::{BOOK_FLIGHT, BOOK_HOTEL, CANCEL_FLIGHT, LOCK_BUDGET, RELEASE_BUDGET};

/// The digest of a request's core parameters: its kind and payload, never
/// its delivery metadata.
pub fn core_digest(kind: &str, payload: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(kind.as_bytes());
    hasher.update(b"\n");
    hasher.update(payload.as_bytes());
    hex16(&hasher.finalize())
}

/// The first 8 bytes of a digest, as 16 hex digits.
pub fn hex16(bytes: &[u8]) -> String {
    bytes.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Whether the hotel in `city` is sold out for `trip_id`: a fixed function of
/// the request (FNV-1a, whose definition cannot change under us).
pub fn hotel_sold_out(trip_id: &str, city: &str, failure: Ratio) -> bool {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in trip_id.bytes().chain([b'|']).chain(city.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash % u64::from(failure.denominator) < u64::from(failure.numerator)
}

/// Performs the business effect numbered `effect_id`; returns its result.
pub fn perform(kind: &str, request_payload: &str, effect_id: i64, hotel_failure: Ratio) -> Result<String> {
    let fields = payload::decode(request_payload).map_err(StoreError::Invalid)?;
    let get = |name: &str| payload::field(&fields, name).map_err(StoreError::Invalid);
    Ok(match kind {
        LOCK_BUDGET => payload::encode(&[("token", &format!("tok-{effect_id}"))]),
        BOOK_FLIGHT => payload::encode(&[("ref", &format!("FL{effect_id}"))]),
        BOOK_HOTEL => {
            if hotel_sold_out(get("trip_id")?, get("city")?, hotel_failure) {
                payload::encode(&[("reason", "sold_out")])
            } else {
                payload::encode(&[("ref", &format!("HT{effect_id}"))])
            }
        }
        CANCEL_FLIGHT => payload::encode(&[("cancelled", get("ref")?)]),
        RELEASE_BUDGET => payload::encode(&[("released", get("token")?)]),
        other => return Err(StoreError::Invalid(format!("unknown command kind {other:?}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_ignores_nothing_but_metadata() {
        assert_eq!(core_digest("a", "{}"), core_digest("a", "{}"));
        assert_ne!(core_digest("a", "{}"), core_digest("b", "{}"));
        assert_eq!(core_digest("a", "{}").len(), 16);
    }

    #[test]
    fn hotel_failures_follow_the_ratio_roughly_and_deterministically() {
        let failed = (0..1000)
            .filter(|i| hotel_sold_out(&format!("trip-{i}"), "Oslo", Ratio::new(1, 4)))
            .count();
        assert!((180..320).contains(&failed), "{failed}");
        assert!(!hotel_sold_out("trip-1", "Oslo", Ratio::ZERO));
        assert!(hotel_sold_out("trip-1", "Oslo", Ratio::ONE));
    }

    #[test]
    fn results_name_their_effect() {
        let hotel = perform(BOOK_HOTEL, r#"{"city":"Oslo","trip_id":"t"}"#, 9, Ratio::ZERO).unwrap();
        assert_eq!(hotel, r#"{"ref":"HT9"}"#);
        assert!(perform("launch_rocket", "{}", 1, Ratio::ZERO).is_err());
    }
}
