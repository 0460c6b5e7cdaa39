//! The reference event store and outbox against an in-memory model, as a
//! proptest state machine: appends (fresh and stale), loads, heads, pending,
//! an event's commands, mark_done, and reopening the connection. Every answer
//! of the real SQLite store must match the model's. The group-commit store
//! (its single-threaded handle, one-call appends) must match the same model.

use std::collections::BTreeMap;

use crashsim::model::{Command, Head, OutboxRow, command_id};
use crashsim::store::group_commit::{Committer, GroupCommitStore};
use crashsim::store::reference::ReferenceStore;
use crashsim::store::{SqliteSettings, Store, StoreError};
use proptest::prelude::*;
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};

const WORKFLOWS: [&str; 3] = ["wf-a", "wf-b", "wf-c"];

#[derive(Clone, Debug, PartialEq, Eq)]
enum Expect {
    Nothing,
    Appended(u64),
    Conflict,
    Changed(bool),
}

#[derive(Clone, Debug, Default)]
struct Model {
    events: BTreeMap<String, Vec<(String, String)>>,
    outbox: Vec<OutboxRow>,
    /// What the last transition must answer.
    expect: Option<Expect>,
}

impl Model {
    fn head(&self, workflow_id: &str) -> u64 {
        self.events.get(workflow_id).map_or(0, |events| events.len() as u64)
    }
}

#[derive(Clone, Debug)]
enum Transition {
    Append {
        workflow_id: String,
        expected_seq: u64,
        kind: String,
        payload: String,
        commands: Vec<Command>,
    },
    Load(String),
    Heads,
    Pending(usize),
    Commands(String, u64),
    MarkDone(String, Option<String>),
    Reopen,
}

struct StoreModel;

impl ReferenceStateMachine for StoreModel {
    type State = Model;
    type Transition = Transition;

    fn init_state() -> BoxedStrategy<Model> {
        Just(Model::default()).boxed()
    }

    fn transitions(state: &Model) -> BoxedStrategy<Transition> {
        let heads: Vec<u64> = WORKFLOWS.iter().map(|wf| state.head(wf)).collect();
        let append = (0..WORKFLOWS.len(), 0u64..4, 0usize..3, 0u8..3, any::<bool>()).prop_map(
            move |(index, offset, commands, kind, fresh)| {
                let head = heads[index];
                // Fresh appends use the head; others are stale (behind) or ahead.
                let expected_seq = if fresh { head } else { (head + 1).saturating_sub(offset) };
                Transition::Append {
                    workflow_id: WORKFLOWS[index].to_string(),
                    expected_seq,
                    kind: format!("kind_{kind}"),
                    payload: format!(r#"{{"n":"{offset}"}}"#),
                    commands: (0..commands)
                        .map(|i| Command {
                            kind: format!("cmd_{i}"),
                            payload: format!(r#"{{"i":"{i}"}}"#),
                        })
                        .collect(),
                }
            },
        );
        let ids: Vec<String> = state.outbox.iter().map(|row| row.command_id.clone()).collect();
        let mark = (any::<prop::sample::Index>(), 0u8..4, any::<bool>()).prop_map(move |(index, result, known)| {
            let id = if known && !ids.is_empty() {
                ids[index.index(ids.len())].clone()
            } else {
                "wf-z:1:0".to_string()
            };
            // Result 3 stands for "no result yet" (an early mark).
            Transition::MarkDone(id, (result < 3).then(|| format!(r#"{{"r":"{result}"}}"#)))
        });
        let workflow = prop::sample::select(WORKFLOWS.to_vec()).prop_map(str::to_string);
        prop_oneof![
            4 => append,
            2 => mark,
            1 => workflow.clone().prop_map(Transition::Load),
            1 => Just(Transition::Heads),
            1 => (1usize..6).prop_map(Transition::Pending),
            1 => (workflow, 0u64..4).prop_map(|(wf, seq)| Transition::Commands(wf, seq)),
            1 => Just(Transition::Reopen),
        ]
        .boxed()
    }

    fn apply(mut state: Model, transition: &Transition) -> Model {
        state.expect = Some(match transition {
            Transition::Append {
                workflow_id,
                expected_seq,
                kind,
                payload,
                commands,
            } => {
                if *expected_seq != state.head(workflow_id) {
                    Expect::Conflict
                } else {
                    let seq = expected_seq + 1;
                    state
                        .events
                        .entry(workflow_id.clone())
                        .or_default()
                        .push((kind.clone(), payload.clone()));
                    for (index, command) in commands.iter().enumerate() {
                        state.outbox.push(OutboxRow {
                            command_id: command_id(workflow_id, seq, index),
                            workflow_id: workflow_id.clone(),
                            event_seq: seq,
                            kind: command.kind.clone(),
                            payload: command.payload.clone(),
                            done: false,
                            result: None,
                        });
                    }
                    Expect::Appended(seq)
                }
            }
            Transition::MarkDone(id, result) => {
                // Pending rows are marked (with or without a result); a row marked
                // without one takes the first result that comes; nothing else changes.
                let row = state.outbox.iter_mut().find(|row| &row.command_id == id);
                match row {
                    Some(row) if !row.done || (row.result.is_none() && result.is_some()) => {
                        row.done = true;
                        row.result = result.clone();
                        Expect::Changed(true)
                    }
                    _ => Expect::Changed(false),
                }
            }
            _ => Expect::Nothing,
        });
        state
    }
}

/// How a test opens the store under test (again, for `Reopen`).
trait Open {
    fn open(path: &std::path::Path) -> Box<dyn Store>;
}

struct OpenReference;

impl Open for OpenReference {
    fn open(path: &std::path::Path) -> Box<dyn Store> {
        let settings = SqliteSettings::default();
        ReferenceStore::create_schema(path, &settings).unwrap();
        Box::new(ReferenceStore::open(path, &settings).unwrap())
    }
}

/// A handle and its own committer; reopening replaces both.
struct OpenGroupCommit;

impl Open for OpenGroupCommit {
    fn open(path: &std::path::Path) -> Box<dyn Store> {
        let settings = SqliteSettings::default();
        ReferenceStore::create_schema(path, &settings).unwrap();
        let committer = Committer::open(path, &settings).unwrap();
        Box::new(GroupCommitStore::open(path, &settings, &committer).unwrap())
    }
}

struct Sut<O> {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    store: Box<dyn Store>,
    open: std::marker::PhantomData<O>,
}

impl<O: Open> StateMachineTest for Sut<O> {
    type SystemUnderTest = Sut<O>;
    type Reference = StoreModel;

    fn init_test(_: &Model) -> Sut<O> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let store = O::open(&path);
        Sut {
            _dir: dir,
            path,
            store,
            open: std::marker::PhantomData,
        }
    }

    fn apply(mut sut: Sut<O>, model: &Model, transition: Transition) -> Sut<O> {
        match transition {
            Transition::Append {
                workflow_id,
                expected_seq,
                kind,
                payload,
                commands,
            } => {
                let result = sut
                    .store
                    .append_with_commands(&workflow_id, expected_seq, &kind, &payload, &commands);
                match (result, model.expect.as_ref().unwrap()) {
                    (Ok((seq, ids)), Expect::Appended(expected)) => {
                        assert_eq!(seq, *expected);
                        let want: Vec<String> = (0..commands.len()).map(|i| command_id(&workflow_id, seq, i)).collect();
                        assert_eq!(ids, want);
                    }
                    (Err(StoreError::Conflict { .. }), Expect::Conflict) => {}
                    (result, expect) => panic!("append answered {result:?}, model expects {expect:?}"),
                }
            }
            Transition::MarkDone(id, result) => {
                let changed = sut.store.mark_done(&id, result.as_deref()).unwrap();
                assert_eq!(Some(&Expect::Changed(changed)), model.expect.as_ref());
            }
            Transition::Load(workflow_id) => {
                let loaded: Vec<(u64, String, String)> = sut
                    .store
                    .load(&workflow_id)
                    .unwrap()
                    .into_iter()
                    .map(|event| (event.seq, event.kind, event.payload))
                    .collect();
                let want: Vec<(u64, String, String)> = model
                    .events
                    .get(&workflow_id)
                    .into_iter()
                    .flatten()
                    .enumerate()
                    .map(|(i, (kind, payload))| (i as u64 + 1, kind.clone(), payload.clone()))
                    .collect();
                assert_eq!(loaded, want);
            }
            Transition::Heads => {
                let want: Vec<Head> = model
                    .events
                    .iter()
                    .filter(|(_, events)| !events.is_empty())
                    .map(|(wf, events)| Head {
                        workflow_id: wf.clone(),
                        last_seq: events.len() as u64,
                        kind: events.last().unwrap().0.clone(),
                        commands_done: model
                            .outbox
                            .iter()
                            .filter(|row| &row.workflow_id == wf && row.event_seq == events.len() as u64 && row.done)
                            .count() as u64,
                    })
                    .collect();
                assert_eq!(sut.store.heads().unwrap(), want);
            }
            Transition::Pending(limit) => {
                let want: Vec<OutboxRow> = model
                    .outbox
                    .iter()
                    .filter(|row| !row.done)
                    .take(limit)
                    .cloned()
                    .collect();
                assert_eq!(sut.store.pending(limit).unwrap(), want);
            }
            Transition::Commands(workflow_id, seq) => {
                let want: Vec<OutboxRow> = model
                    .outbox
                    .iter()
                    .filter(|row| row.workflow_id == workflow_id && row.event_seq == seq)
                    .cloned()
                    .collect();
                assert_eq!(sut.store.commands(&workflow_id, seq).unwrap(), want);
            }
            Transition::Reopen => {
                sut.store = O::open(&sut.path);
            }
        }
        sut
    }
}

prop_state_machine! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn reference_store_matches_the_model(sequential 1..40 => Sut<OpenReference>);

    #[test]
    fn group_commit_store_matches_the_model(sequential 1..40 => Sut<OpenGroupCommit>);
}
