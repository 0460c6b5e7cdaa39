//! `ActorId`: who did something, written `writer-3`, `worker-0`, `receiver-1`,
//! `prober` or `sim` in traces.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Writer,
    Worker,
    Receiver,
    /// Sends key-conflict probes (a fault, not an actor with a connection).
    Prober,
    /// The simulator itself.
    Sim,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Writer => "writer",
            Role::Worker => "worker",
            Role::Receiver => "receiver",
            Role::Prober => "prober",
            Role::Sim => "sim",
        }
    }

    pub fn from_name(name: &str) -> Option<Role> {
        [Role::Writer, Role::Worker, Role::Receiver, Role::Prober, Role::Sim]
            .into_iter()
            .find(|role| role.name() == name)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct ActorId {
    pub role: Role,
    pub index: u32,
}

impl ActorId {
    pub const SIM: ActorId = ActorId {
        role: Role::Sim,
        index: 0,
    };
    pub const PROBER: ActorId = ActorId {
        role: Role::Prober,
        index: 0,
    };

    pub fn new(role: Role, index: u32) -> ActorId {
        ActorId { role, index }
    }
}

impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.role {
            Role::Sim | Role::Prober => f.write_str(self.role.name()),
            role => write!(f, "{}-{}", role.name(), self.index),
        }
    }
}

impl FromStr for ActorId {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if let Some(role @ (Role::Sim | Role::Prober)) = Role::from_name(text) {
            return Ok(ActorId::new(role, 0));
        }
        let (role, index) = text.rsplit_once('-').ok_or_else(|| format!("bad actor id {text:?}"))?;
        let role = Role::from_name(role).ok_or_else(|| format!("bad actor role in {text:?}"))?;
        let index = index.parse().map_err(|_| format!("bad actor index in {text:?}"))?;
        Ok(ActorId::new(role, index))
    }
}

impl From<ActorId> for String {
    fn from(id: ActorId) -> String {
        id.to_string()
    }
}

impl TryFrom<String> for ActorId {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_text() {
        for id in [
            ActorId::new(Role::Writer, 3),
            ActorId::new(Role::Receiver, 0),
            ActorId::SIM,
            ActorId::PROBER,
        ] {
            assert_eq!(id.to_string().parse::<ActorId>(), Ok(id));
        }
        assert!("dancer-1".parse::<ActorId>().is_err());
    }
}
