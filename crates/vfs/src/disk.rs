//! The disk a power cut finds: per file, its *durable image* (the content
//! as of its last `xSync`) and the log of what happened since (writes,
//! truncations), and for the directory, which names are durable and which
//! links and unlinks are not yet. `restore` rewrites the files as a model
//! of the disk decides:
//!
//! - `drop_unsynced`: every unsynced operation is lost;
//! - `random`: in the manner of SQLite's own crash-test VFS (test6.c), each
//!   unsynced write is kept, lost, torn (512-byte sectors kept or lost one by
//!   one) or garbled (one sector written with noise), each truncation and
//!   deletion kept or lost, as the seed decides;
//! - `keep_all`: everything is kept: the process died, the disk did not.
//!
//! Content and names are synced apart, as on a real file system: `xSync`
//! makes a file's content durable, a directory sync makes every name change
//! durable (the `unix` VFS does one inside the first sync of a WAL or
//! journal handle it created, and after a deletion when SQLite asks for
//! it). That is what separates `journal_mode=DELETE` under
//! `synchronous=FULL` (the last commit's journal may come back and roll it
//! back) from `EXTRA`. The WAL index (`-shm`) lives in shared memory, never
//! synced: a cut removes it.
//!
//! This is the one model of the disk: crashsim's in-process crash VFS feeds
//! it directly, and the loadable extension inside an outside store's
//! process feeds it through a log (`log`) that crashsim reads back.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::c_int;

use crate::ffi;

/// What a power cut does to the writes not yet synced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Model {
    /// Every unsynced operation is lost.
    #[default]
    DropUnsynced,
    /// Each unsynced operation kept, lost, torn or garbled, as the seed decides.
    Random,
    /// Everything is kept (process death only).
    KeepAll,
}

impl Model {
    pub const ALL: [Model; 3] = [Model::DropUnsynced, Model::Random, Model::KeepAll];

    /// Its name in scenarios and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Model::DropUnsynced => "drop_unsynced",
            Model::Random => "random",
            Model::KeepAll => "keep_all",
        }
    }

    pub fn from_name(name: &str) -> Option<Model> {
        Model::ALL.into_iter().find(|model| model.name() == name)
    }

    /// One line for `crashsim list`.
    pub fn describe(self) -> &'static str {
        match self {
            Model::DropUnsynced => "every write, truncate and delete not yet synced is lost",
            Model::Random => {
                "each unsynced operation kept, dropped, torn at 512 B sectors or garbled (as SQLite's test6.c)"
            }
            Model::KeepAll => "every write kept: process death, not power loss",
        }
    }

    /// The model's number in the shared control region.
    pub fn code(self) -> u64 {
        match self {
            Model::DropUnsynced => 0,
            Model::Random => 1,
            Model::KeepAll => 2,
        }
    }

    pub fn from_code(code: u64) -> Model {
        match code {
            1 => Model::Random,
            2 => Model::KeepAll,
            _ => Model::DropUnsynced,
        }
    }

    /// What the device claims, given what the real file claims: `random`
    /// tears and garbles sectors, so it claims nothing (no powersafe
    /// overwrite, no atomic or sequential writes); the others forward what
    /// the real file claims, which their behaviour honours.
    pub fn device_characteristics(self, inner: c_int) -> c_int {
        match self {
            Model::Random => 0,
            Model::DropUnsynced | Model::KeepAll => inner,
        }
    }
}

/// The draws `restore` makes under the `random` model: crashsim's seeded
/// PRNG, so that one seed leaves the same bytes.
pub trait Draws {
    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64;
    /// True half of the time.
    fn coin(&mut self) -> bool;
    /// An index in `0..len`.
    fn index(&mut self, len: usize) -> usize;
}

/// The sector size torn writes are cut at.
const SECTOR: usize = 512;

/// A change to one file's content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContentOp {
    Write { offset: u64, data: Vec<u8> },
    Truncate { size: u64 },
}

/// A change to the directory: which name points at which file.
#[derive(Clone, Debug)]
enum DirOp {
    Link { name: String, inode: usize },
    Unlink { name: String },
}

/// A file's content: as of its last sync, and the changes since.
#[derive(Debug, Default)]
struct Inode {
    durable: Vec<u8>,
    pending: Vec<ContentOp>,
}

/// What a restore did, for the trace and the reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// Unsynced operations applied as they were.
    pub kept: u64,
    /// Unsynced operations lost.
    pub lost: u64,
    /// Writes torn at sector granularity or garbled.
    pub torn: u64,
}

/// The disk as the cut will find it.
#[derive(Debug, Default)]
pub struct State {
    inodes: Vec<Inode>,
    /// Names as they are now, and as they are durably.
    names: BTreeMap<String, usize>,
    durable_names: BTreeMap<String, usize>,
    pending_names: Vec<DirOp>,
    /// Every path this model has ever tracked.
    seen: BTreeSet<String>,
}

fn apply(content: &mut Vec<u8>, op: &ContentOp) {
    match op {
        ContentOp::Write { offset, data } => {
            let start = *offset as usize;
            if content.len() < start + data.len() {
                content.resize(start + data.len(), 0);
            }
            content[start..start + data.len()].copy_from_slice(data);
        }
        ContentOp::Truncate { size } => content.resize(*size as usize, 0),
    }
}

impl State {
    /// Whether the model tracks no file at all.
    pub fn is_empty(&self) -> bool {
        self.inodes.is_empty() && self.names.is_empty()
    }

    /// Whether the model tracks `path` now.
    pub fn knows(&self, path: &str) -> bool {
        self.names.contains_key(path)
    }

    /// A file was opened (call only when `!knows(path)`), holding `on_disk`.
    /// Seen for the first time with content: it was on disk before the
    /// model saw it, so durable, name and content. Otherwise it is created
    /// now: neither name nor content durable yet.
    pub fn open(&mut self, path: &str, on_disk: Vec<u8>) {
        if self.knows(path) {
            return;
        }
        let first_sight = self.seen.insert(path.to_string());
        if first_sight && !on_disk.is_empty() {
            let inode = self.new_inode(on_disk);
            self.names.insert(path.to_string(), inode);
            self.durable_names.insert(path.to_string(), inode);
        } else {
            let inode = self.new_inode(Vec::new());
            self.inodes[inode].pending.push(ContentOp::Truncate { size: 0 });
            if !on_disk.is_empty() {
                self.inodes[inode].pending.push(ContentOp::Write {
                    offset: 0,
                    data: on_disk,
                });
            }
            self.names.insert(path.to_string(), inode);
            self.pending_names.push(DirOp::Link {
                name: path.to_string(),
                inode,
            });
        }
    }

    /// A write or truncation of `path`, not yet synced.
    pub fn change(&mut self, path: &str, op: ContentOp) {
        if let Some(&inode) = self.names.get(path) {
            self.inodes[inode].pending.push(op);
        }
    }

    /// A successful `xSync` of a handle on `path` opened with `flags`,
    /// which had synced `syncs` times before. `inner_is_unix`: the real VFS
    /// is `unix*`, which syncs the directory inside the first sync of a WAL
    /// or journal handle it created (`UNIXFILE_DIRSYNC`).
    pub fn synced(&mut self, path: &str, flags: c_int, syncs: u64, inner_is_unix: bool) {
        if let Some(&inode) = self.names.get(path) {
            let inode = &mut self.inodes[inode];
            for op in std::mem::take(&mut inode.pending) {
                apply(&mut inode.durable, &op);
            }
        }
        let kind = flags & (ffi::SQLITE_OPEN_WAL | ffi::SQLITE_OPEN_MAIN_JOURNAL | ffi::SQLITE_OPEN_SUPER_JOURNAL);
        if inner_is_unix && syncs == 0 && flags & ffi::SQLITE_OPEN_CREATE != 0 && kind != 0 {
            self.sync_directory();
        }
    }

    /// A successful `xDelete` (`sync_dir`: SQLite asked for the directory
    /// to be synced with it).
    pub fn deleted(&mut self, path: &str, sync_dir: bool) {
        if self.names.remove(path).is_some() {
            self.pending_names.push(DirOp::Unlink { name: path.to_string() });
        }
        if sync_dir {
            self.sync_directory();
        }
    }

    fn new_inode(&mut self, durable: Vec<u8>) -> usize {
        self.inodes.push(Inode {
            durable,
            pending: Vec::new(),
        });
        self.inodes.len() - 1
    }

    fn sync_directory(&mut self) {
        self.durable_names = self.names.clone();
        self.pending_names.clear();
    }

    /// After a cut, with every connection closed: rewrites each file as
    /// `model` leaves it and removes the WAL index.
    pub fn restore(&mut self, model: Model, draws: &mut dyn Draws) -> std::io::Result<Restored> {
        let mut restored = Restored::default();
        // Names first: which file each path is after the cut.
        let mut names = self.durable_names.clone();
        for op in std::mem::take(&mut self.pending_names) {
            let fate = match model {
                Model::KeepAll => Fate::Keep,
                Model::DropUnsynced => Fate::Lose,
                Model::Random => Fate::draw_other(draws),
            };
            if !matches!(fate, Fate::Keep) {
                restored.lost += 1;
                continue;
            }
            restored.kept += 1;
            match op {
                DirOp::Link { name, inode } => {
                    names.insert(name, inode);
                }
                DirOp::Unlink { name } => {
                    names.remove(&name);
                }
            }
        }
        // Then every file's content.
        for inode in &mut self.inodes {
            let mut content = std::mem::take(&mut inode.durable);
            for op in inode.pending.drain(..) {
                let fate = match model {
                    Model::KeepAll => Fate::Keep,
                    Model::DropUnsynced => Fate::Lose,
                    Model::Random => Fate::draw_content(&op, draws),
                };
                match (fate, op) {
                    (Fate::Keep, op) => {
                        apply(&mut content, &op);
                        restored.kept += 1;
                    }
                    (Fate::Lose, _) => restored.lost += 1,
                    (Fate::Tear, ContentOp::Write { mut offset, data }) => {
                        for sector in data.chunks(SECTOR) {
                            if draws.coin() {
                                let op = ContentOp::Write {
                                    offset,
                                    data: sector.to_vec(),
                                };
                                apply(&mut content, &op);
                            }
                            offset += sector.len() as u64;
                        }
                        restored.torn += 1;
                    }
                    (Fate::Garble, ContentOp::Write { offset, mut data }) => {
                        let sectors = data.len().div_ceil(SECTOR).max(1);
                        let start = draws.index(sectors) * SECTOR;
                        let end = (start + SECTOR).min(data.len());
                        for byte in &mut data[start..end] {
                            *byte = draws.below(256) as u8;
                        }
                        apply(&mut content, &ContentOp::Write { offset, data });
                        restored.torn += 1;
                    }
                    (Fate::Tear | Fate::Garble, op) => {
                        apply(&mut content, &op);
                        restored.kept += 1;
                    }
                }
            }
            inode.durable = content;
        }
        // Write the result: every path ever seen exists or not as `names` says.
        let paths: Vec<String> = self.names.keys().chain(self.durable_names.keys()).cloned().collect();
        let mut seen = BTreeSet::new();
        for path in paths.into_iter().filter(|path| seen.insert(path.clone())) {
            match names.get(&path) {
                Some(&inode) => std::fs::write(&path, &self.inodes[inode].durable)?,
                None => remove(&path)?,
            }
            if !path.ends_with("-wal") && !path.ends_with("-journal") {
                remove(&format!("{path}-shm"))?;
            }
        }
        self.names = names.clone();
        self.durable_names = names;
        Ok(restored)
    }
}

fn remove(path: &str) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// What the `random` model does with one unsynced operation.
enum Fate {
    Keep,
    Lose,
    Tear,
    Garble,
}

impl Fate {
    fn draw_content(op: &ContentOp, draws: &mut dyn Draws) -> Fate {
        match op {
            ContentOp::Write { .. } => match draws.below(8) {
                0..=3 => Fate::Keep,
                4 | 5 => Fate::Lose,
                6 => Fate::Tear,
                _ => Fate::Garble,
            },
            ContentOp::Truncate { .. } => Fate::draw_other(draws),
        }
    }

    fn draw_other(draws: &mut dyn Draws) -> Fate {
        if draws.coin() { Fate::Keep } else { Fate::Lose }
    }
}
