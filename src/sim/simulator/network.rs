//! The simulated network: messages between actors, their losses,
//! duplicates and latency, and the key-conflict prober.

use super::{Event, Life, Phase, Simulator};
use crate::actors::{ActorId, Role};
use crate::sim::faults::{Fault, Injected};
use crate::sim::net::{Address, Message};
use crate::store::Request;
use crate::trace::Op;
use crate::workflow::payload;

impl Simulator<'_> {
    /// Puts a message on the wire: it may be lost or duplicated while faults
    /// are on, and arrives after 1..=latency_ticks_max ticks.
    pub(super) fn send(&mut self, from: ActorId, to: Address, message: Message) {
        let faults_on = self.phase == Phase::Faults;
        if let Message::Request { request, reply_to } = &message
            && reply_to.actor.role == Role::Worker
        {
            self.requests
                .entry(request.key.clone())
                .or_insert_with(|| (request.kind.clone(), request.payload.clone()));
        }
        let send = match self.slot_of(from) {
            Some(slot) => {
                self.slots[slot].sent += 1;
                self.slots[slot].sent
            }
            None => {
                self.prober_sent += 1;
                self.prober_sent
            }
        };
        let drop = Fault::Drop { from, send };
        if faults_on && self.source.fires(&mut self.loss_prng, self.plan.net_drop, &drop) {
            self.injected.push(Injected {
                tick: self.now,
                fault: drop,
            });
            let op = Op::Lost {
                key: message.key().to_string(),
                to: to.actor,
                reason: "dropped by the network".to_string(),
            };
            self.record(from, op);
            return;
        }
        let message = self.replace_reply(from, to, send, message);
        let mut copies = 1;
        let duplicate = Fault::Duplicate { from, send };
        if faults_on
            && self
                .source
                .fires(&mut self.loss_prng, self.plan.net_duplicate, &duplicate)
        {
            copies = 2;
            self.injected.push(Injected {
                tick: self.now,
                fault: duplicate,
            });
            let op = Op::Duplicated {
                key: message.key().to_string(),
                to: to.actor,
            };
            self.record(from, op);
        }
        for _ in 0..copies {
            let latency = self
                .latency_prng
                .range_inclusive(1, self.world.timing.latency_ticks_max);
            self.in_flight += 1;
            self.queue.push(
                self.now + latency,
                Event::Deliver {
                    to,
                    message: message.clone(),
                },
            );
        }
    }

    pub(super) fn slot_of(&self, id: ActorId) -> Option<usize> {
        let workload = &self.scenario.workload;
        let offset = match id.role {
            Role::Writer => 0,
            Role::Worker => workload.writers_count,
            Role::Receiver => workload.writers_count + workload.workers_count,
            Role::Prober | Role::Sim => return None,
        };
        Some((offset + id.index) as usize)
    }

    pub(super) fn deliver(&mut self, to: Address, message: Message) {
        self.in_flight -= 1;
        if to.actor == ActorId::PROBER {
            if let Message::Reply { key, outcome } = message {
                self.record(ActorId::PROBER, Op::ProbeReply { key, outcome });
            }
            return;
        }
        let slot = self.slot_of(to.actor).expect("messages go to actors");
        let entry = &self.slots[slot];
        let alive = matches!(entry.life, Life::Up(_)) && to.incarnation.is_none_or(|life| life == entry.incarnation);
        if !alive {
            let op = Op::Lost {
                key: message.key().to_string(),
                to: to.actor,
                reason: "recipient is down or restarted".to_string(),
            };
            self.record(ActorId::SIM, op);
            return;
        }
        if self.refuse(to.actor, &message) {
            return;
        }
        let probe = match &message {
            Message::Reply { key, outcome } if outcome.result().is_some() => Some(key.clone()),
            _ => None,
        };
        let entry = &mut self.slots[slot];
        if let Life::Up(actor) = &mut entry.life {
            actor.deliver(message);
        }
        if entry.waiting {
            let delay = self.step_delay(slot);
            self.wake(slot, delay);
        }
        if let Some(key) = probe {
            self.maybe_probe(key);
        }
    }

    /// After a confirmed reply, maybe send a rogue request that reuses the
    /// key with other core parameters (I7).
    fn maybe_probe(&mut self, key: String) {
        self.confirmed_replies += 1;
        let probe = Fault::Probe {
            reply: self.confirmed_replies,
        };
        if self.phase != Phase::Faults || !self.source.fires(&mut self.probe_prng, self.plan.key_conflict, &probe) {
            return;
        }
        let Some((kind, original)) = self.requests.get(&key).cloned() else {
            return;
        };
        let Ok(mut fields) = payload::decode(&original) else {
            return;
        };
        self.injected.push(Injected {
            tick: self.now,
            fault: probe,
        });
        self.probes += 1;
        fields.insert("probe".to_string(), self.probes.to_string());
        let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let altered = payload::encode(&pairs);
        let index = self.probe_target_prng.below(u64::from(self.world.receivers_count)) as u32;
        let to = ActorId::new(Role::Receiver, index);
        self.record(
            ActorId::PROBER,
            Op::Probe {
                key: key.clone(),
                to,
                payload: altered.clone(),
            },
        );
        let request = Request {
            key,
            kind,
            payload: altered,
            attempt: 0,
            sent_tick: self.now,
        };
        let reply_to = Address {
            actor: ActorId::PROBER,
            incarnation: None,
        };
        self.send(
            ActorId::PROBER,
            Address {
                actor: to,
                incarnation: None,
            },
            Message::Request { request, reply_to },
        );
    }
}
