//! The simulated network: messages between actors, their losses,
//! duplicates and latency, and the key-conflict prober.

use super::{Event, Life, Phase, Simulator};
use crate::actors::{ActorId, Role};
use crate::faults::{Fault, Injected};
use crate::sim::net::{Address, Message};
use crate::store::Request;
use crate::trace::Op;
use crate::workflow::payload;
use crate::workload::NearMiss;
use crate::workload::near_miss::is_command_id_of;

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
                .range_inclusive(1, self.scenario.timing.latency_ticks_max);
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

    /// After a confirmed reply to a worker, maybe probe its key (fault
    /// phase only): a rogue request that reuses the key with other core
    /// parameters, and a request with the same parameters under a near
    /// miss of the key (I7).
    fn maybe_probe(&mut self, key: String) {
        self.confirmed_replies += 1;
        if self.phase != Phase::Faults {
            return;
        }
        self.near_miss_probe(&key);
        self.conflict_probe(key);
    }

    /// A rogue request that reuses `key` with other core parameters: the
    /// receiver must reject it as a conflict.
    fn conflict_probe(&mut self, key: String) {
        let probe = Fault::Probe {
            reply: self.confirmed_replies,
        };
        if !self.source.fires(&mut self.probe_prng, self.plan.key_conflict, &probe) {
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
        self.send_probe(to, key, kind, altered);
    }

    /// The request of `key` with its exact parameters under a near miss of
    /// the key: another operation, which the receiver must apply as new.
    /// A near miss is never a key any command could have, nor one used before.
    fn near_miss_probe(&mut self, key: &str) {
        let reply = self.confirmed_replies;
        let fresh = |form: NearMiss| {
            form.apply(key).is_some_and(|near| {
                !is_command_id_of(&near, &self.workflow_ids)
                    && !self.requests.contains_key(&near)
                    && !self.near_keys.contains(&near)
            })
        };
        let Some(form) = self
            .source
            .near_miss(&mut self.near_miss_prng, self.plan.near_miss, reply, fresh)
        else {
            return;
        };
        let (Some((kind, payload)), Some(near)) = (self.requests.get(key).cloned(), form.apply(key)) else {
            return;
        };
        self.injected.push(Injected {
            tick: self.now,
            fault: Fault::NearMiss { reply, form },
        });
        self.near_keys.insert(near.clone());
        let index = self.near_miss_target_prng.below(u64::from(self.world.receivers_count)) as u32;
        let to = ActorId::new(Role::Receiver, index);
        self.record(
            ActorId::PROBER,
            Op::NearMiss {
                key: near.clone(),
                of: key.to_string(),
                form,
                to,
            },
        );
        self.send_probe(to, near, kind, payload);
    }

    fn send_probe(&mut self, to: ActorId, key: String, kind: String, payload: String) {
        let request = Request {
            key,
            kind,
            payload,
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
