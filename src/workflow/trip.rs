//! The trip-booking saga: `decide(state, event) -> (state', commands)`.
//!
//! | event                  | commands                          |
//! |------------------------|-----------------------------------|
//! | `trip_requested{city}` | `lock_budget{trip_id}`            |
//! | `budget_locked{token}` | `book_flight{city, trip_id}`      |
//! | `flight_booked{ref}`   | `book_hotel{city, trip_id}`       |
//! | `hotel_booked{ref}`    | none: complete                    |
//! | `hotel_failed{reason}` | `cancel_flight`, `release_budget` |
//!
//! An event that does not fit the state is a `DecideError`: a writer never
//! produces one, so a stored history that fails to fold was decided from a
//! stale head (I3).

use serde::Serialize;

use super::payload::{self, Fields};
use crate::model::{Command, Event};

pub const TRIP_REQUESTED: &str = "trip_requested";
pub const BUDGET_LOCKED: &str = "budget_locked";
pub const FLIGHT_BOOKED: &str = "flight_booked";
pub const HOTEL_BOOKED: &str = "hotel_booked";
pub const HOTEL_FAILED: &str = "hotel_failed";

pub const LOCK_BUDGET: &str = "lock_budget";
pub const BOOK_FLIGHT: &str = "book_flight";
pub const BOOK_HOTEL: &str = "book_hotel";
pub const CANCEL_FLIGHT: &str = "cancel_flight";
pub const RELEASE_BUDGET: &str = "release_budget";

/// Every event kind, in saga order.
pub const EVENT_KINDS: [&str; 5] = [TRIP_REQUESTED, BUDGET_LOCKED, FLIGHT_BOOKED, HOTEL_BOOKED, HOTEL_FAILED];

/// Where a trip stands. Every field is a value some receiver returned, so the
/// state shows which effects the workflow believes in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    New,
    Requested {
        city: String,
    },
    BudgetLocked {
        city: String,
        token: String,
    },
    FlightBooked {
        city: String,
        token: String,
        flight: String,
    },
    /// Terminal: the trip is complete.
    Booked {
        city: String,
        token: String,
        flight: String,
        hotel: String,
    },
    /// Terminal: the hotel failed; compensation commands were emitted.
    Failed {
        city: String,
        token: String,
        flight: String,
        reason: String,
    },
}

/// One trip's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Trip {
    pub trip_id: String,
    #[serde(flatten)]
    pub phase: Phase,
}

/// An event that does not fit the state it was applied to.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{trip_id}: event {event_kind} does not fit phase {phase}: {reason}")]
pub struct DecideError {
    pub trip_id: String,
    pub phase: String,
    pub event_kind: String,
    pub reason: String,
}

impl Trip {
    pub fn new(trip_id: &str) -> Trip {
        Trip {
            trip_id: trip_id.to_string(),
            phase: Phase::New,
        }
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self.phase, Phase::Booked { .. } | Phase::Failed { .. })
    }

    /// The kind of the command whose result the trip waits for (always the
    /// head event's only command); `None` for a new or terminal trip.
    pub fn awaiting(&self) -> Option<&'static str> {
        match self.phase {
            Phase::Requested { .. } => Some(LOCK_BUDGET),
            Phase::BudgetLocked { .. } => Some(BOOK_FLIGHT),
            Phase::FlightBooked { .. } => Some(BOOK_HOTEL),
            Phase::New | Phase::Booked { .. } | Phase::Failed { .. } => None,
        }
    }

    /// The phase's name, as it appears in errors and traces.
    pub fn phase_name(&self) -> &'static str {
        match self.phase {
            Phase::New => "new",
            Phase::Requested { .. } => "requested",
            Phase::BudgetLocked { .. } => "budget_locked",
            Phase::FlightBooked { .. } => "flight_booked",
            Phase::Booked { .. } => "booked",
            Phase::Failed { .. } => "failed",
        }
    }

    /// A compact, stable rendering of the state for traces: the live
    /// writer's view, compared by the I6 checker with a fresh replay.
    pub fn digest(&self) -> String {
        serde_json::to_string(self).expect("a trip always serialises")
    }
}

/// Whether an event of this kind ends its workflow.
pub fn is_terminal_kind(kind: &str) -> bool {
    kind == HOTEL_BOOKED || kind == HOTEL_FAILED
}

/// The event that starts a trip.
pub fn request(city: &str) -> Event {
    event(TRIP_REQUESTED, &[("city", city)])
}

/// The event that records the confirmed `result` of the command `trip` awaits.
pub fn event_for_result(trip: &Trip, result: &str) -> Result<Event, DecideError> {
    let awaiting = trip
        .awaiting()
        .ok_or_else(|| trip.error("result", "the trip awaits no command"))?;
    let fields = payload::decode(result).map_err(|reason| trip.error("result", &reason))?;
    let get = |name: &str| payload::field(&fields, name).map_err(|reason| trip.error("result", &reason));
    Ok(match awaiting {
        LOCK_BUDGET => event(BUDGET_LOCKED, &[("token", get("token")?)]),
        BOOK_FLIGHT => event(FLIGHT_BOOKED, &[("ref", get("ref")?)]),
        _ => match fields.get("reason") {
            Some(reason) => event(HOTEL_FAILED, &[("reason", reason)]),
            None => event(HOTEL_BOOKED, &[("ref", get("ref")?)]),
        },
    })
}

/// The saga's transition function. Pure.
pub fn decide(trip: &Trip, event: &Event) -> Result<(Trip, Vec<Command>), DecideError> {
    let fields: Fields = payload::decode(&event.payload).map_err(|reason| trip.error(&event.kind, &reason))?;
    let get = |name: &str| {
        payload::field(&fields, name)
            .map(str::to_string)
            .map_err(|reason| trip.error(&event.kind, &reason))
    };
    let id = trip.trip_id.as_str();
    let (phase, commands) = match (&trip.phase, event.kind.as_str()) {
        (Phase::New, TRIP_REQUESTED) => {
            let city = get("city")?;
            let commands = vec![command(LOCK_BUDGET, &[("trip_id", id)])];
            (Phase::Requested { city }, commands)
        }
        (Phase::Requested { city }, BUDGET_LOCKED) => {
            let commands = vec![command(BOOK_FLIGHT, &[("city", city), ("trip_id", id)])];
            let token = get("token")?;
            (
                Phase::BudgetLocked {
                    city: city.clone(),
                    token,
                },
                commands,
            )
        }
        (Phase::BudgetLocked { city, token }, FLIGHT_BOOKED) => {
            let commands = vec![command(BOOK_HOTEL, &[("city", city), ("trip_id", id)])];
            let phase = Phase::FlightBooked {
                city: city.clone(),
                token: token.clone(),
                flight: get("ref")?,
            };
            (phase, commands)
        }
        (Phase::FlightBooked { city, token, flight }, HOTEL_BOOKED) => {
            let phase = Phase::Booked {
                city: city.clone(),
                token: token.clone(),
                flight: flight.clone(),
                hotel: get("ref")?,
            };
            (phase, Vec::new())
        }
        (Phase::FlightBooked { city, token, flight }, HOTEL_FAILED) => {
            let commands = vec![
                command(CANCEL_FLIGHT, &[("ref", flight), ("trip_id", id)]),
                command(RELEASE_BUDGET, &[("token", token), ("trip_id", id)]),
            ];
            let phase = Phase::Failed {
                city: city.clone(),
                token: token.clone(),
                flight: flight.clone(),
                reason: get("reason")?,
            };
            (phase, commands)
        }
        _ => return Err(trip.error(&event.kind, "no such transition")),
    };
    Ok((
        Trip {
            trip_id: trip.trip_id.clone(),
            phase,
        },
        commands,
    ))
}

impl Trip {
    fn error(&self, event_kind: &str, reason: &str) -> DecideError {
        DecideError {
            trip_id: self.trip_id.clone(),
            phase: self.phase_name().to_string(),
            event_kind: event_kind.to_string(),
            reason: reason.to_string(),
        }
    }
}

fn event(kind: &str, fields: &[(&str, &str)]) -> Event {
    Event {
        kind: kind.to_string(),
        payload: payload::encode(fields),
    }
}

fn command(kind: &str, fields: &[(&str, &str)]) -> Command {
    Command {
        kind: kind.to_string(),
        payload: payload::encode(fields),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(trip: &Trip, event: Event) -> (Trip, Vec<Command>) {
        decide(trip, &event).expect("valid transition")
    }

    #[test]
    fn happy_path_books_flight_then_hotel() {
        let trip = Trip::new("trip-1");
        let (trip, commands) = step(&trip, request("Oslo"));
        assert_eq!(commands[0].kind, LOCK_BUDGET);
        assert_eq!(trip.awaiting(), Some(LOCK_BUDGET));
        let (trip, commands) = step(&trip, event_for_result(&trip, r#"{"token":"t1"}"#).unwrap());
        assert_eq!(commands[0].kind, BOOK_FLIGHT);
        assert_eq!(commands[0].payload, r#"{"city":"Oslo","trip_id":"trip-1"}"#);
        let (trip, commands) = step(&trip, event_for_result(&trip, r#"{"ref":"F1"}"#).unwrap());
        assert_eq!(commands[0].kind, BOOK_HOTEL);
        let (trip, commands) = step(&trip, event_for_result(&trip, r#"{"ref":"H1"}"#).unwrap());
        assert!(commands.is_empty());
        assert!(trip.is_terminal());
        assert_eq!(trip.awaiting(), None);
    }

    #[test]
    fn hotel_failure_compensates() {
        let mut trip = Trip::new("trip-2");
        for event in [
            request("Lima"),
            event(BUDGET_LOCKED, &[("token", "t")]),
            event(FLIGHT_BOOKED, &[("ref", "F")]),
        ] {
            trip = step(&trip, event).0;
        }
        let failed = event_for_result(&trip, r#"{"reason":"sold_out"}"#).unwrap();
        assert_eq!(failed.kind, HOTEL_FAILED);
        let (trip, commands) = step(&trip, failed);
        assert!(trip.is_terminal());
        let kinds: Vec<&str> = commands.iter().map(|c| c.kind.as_str()).collect();
        assert_eq!(kinds, [CANCEL_FLIGHT, RELEASE_BUDGET]);
        assert_eq!(commands[1].payload, r#"{"token":"t","trip_id":"trip-2"}"#);
    }

    #[test]
    fn stale_or_repeated_events_are_rejected() {
        let trip = step(&Trip::new("trip-3"), request("Rome")).0;
        assert!(decide(&trip, &request("Rome")).is_err());
        let locked = step(&trip, event(BUDGET_LOCKED, &[("token", "t")])).0;
        assert!(decide(&locked, &event(BUDGET_LOCKED, &[("token", "t2")])).is_err());
        assert!(decide(&trip, &event(BUDGET_LOCKED, &[])).is_err());
        assert!(event_for_result(&Trip::new("x"), "{}").is_err());
    }
}
