//! The change log a crash VFS in another process writes and crashsim reads
//! back into the disk model (`disk::State`): every open, write, truncation,
//! sync and deletion, in the order they happened, in a file of the seed's
//! work directory, so it outlives the `SIGKILL` of the process that wrote
//! it.
//!
//! Each record is one `write(2)` on a file opened `O_APPEND`: a little-endian
//! `u32` length, then a tag byte and the fields. Only one process of a seed
//! works at a time, so records never interleave; crashsim reads what was
//! appended since it last looked, and empties the file when it has read it
//! all.

use std::ffi::c_int;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::disk::{ContentOp, State};

/// One change, as the VFS saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A file opened, `size` bytes long as it opened.
    Opened {
        path: String,
        size: u64,
    },
    Write {
        path: String,
        offset: u64,
        data: Vec<u8>,
    },
    Truncate {
        path: String,
        size: u64,
    },
    /// A successful sync of a handle opened with `flags` that had synced
    /// `syncs` times before.
    Synced {
        path: String,
        flags: c_int,
        syncs: u64,
    },
    Deleted {
        path: String,
        sync_dir: bool,
    },
}

const OPENED: u8 = 1;
const WRITE: u8 = 2;
const TRUNCATE: u8 = 3;
const SYNCED: u8 = 4;
const DELETED: u8 = 5;

impl Event {
    /// The record's bytes, length first.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0; 4];
        let path = match self {
            Event::Opened { path, size } => {
                out.push(OPENED);
                out.extend_from_slice(&size.to_le_bytes());
                path
            }
            Event::Write { path, offset, data } => {
                out.push(WRITE);
                out.extend_from_slice(&offset.to_le_bytes());
                out.extend_from_slice(&(data.len() as u32).to_le_bytes());
                out.extend_from_slice(data);
                path
            }
            Event::Truncate { path, size } => {
                out.push(TRUNCATE);
                out.extend_from_slice(&size.to_le_bytes());
                path
            }
            Event::Synced { path, flags, syncs } => {
                out.push(SYNCED);
                out.extend_from_slice(&flags.to_le_bytes());
                out.extend_from_slice(&syncs.to_le_bytes());
                path
            }
            Event::Deleted { path, sync_dir } => {
                out.push(DELETED);
                out.push(u8::from(*sync_dir));
                path
            }
        };
        out.extend_from_slice(path.as_bytes());
        let length = (out.len() - 4) as u32;
        out[..4].copy_from_slice(&length.to_le_bytes());
        out
    }

    /// One record's body (after its length); `None` if it is not one.
    pub fn decode(body: &[u8]) -> Option<Event> {
        let (&tag, rest) = body.split_first()?;
        let mut reader = Fields(rest);
        let event = match tag {
            OPENED => {
                let size = reader.u64()?;
                Event::Opened {
                    size,
                    path: reader.path()?,
                }
            }
            WRITE => {
                let offset = reader.u64()?;
                let length = reader.u32()? as usize;
                let data = reader.take(length)?.to_vec();
                Event::Write {
                    offset,
                    data,
                    path: reader.path()?,
                }
            }
            TRUNCATE => {
                let size = reader.u64()?;
                Event::Truncate {
                    size,
                    path: reader.path()?,
                }
            }
            SYNCED => {
                let flags = reader.u32()? as c_int;
                let syncs = reader.u64()?;
                Event::Synced {
                    flags,
                    syncs,
                    path: reader.path()?,
                }
            }
            DELETED => {
                let sync_dir = reader.take(1)?[0] != 0;
                Event::Deleted {
                    sync_dir,
                    path: reader.path()?,
                }
            }
            _ => return None,
        };
        Some(event)
    }
}

struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// The rest, as a path.
    fn path(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.0);
        String::from_utf8(rest.to_vec()).ok()
    }
}

/// The writing end, in a crash VFS.
#[derive(Debug)]
pub struct Writer {
    file: File,
}

impl Writer {
    pub fn open(path: &Path) -> std::io::Result<Writer> {
        let file = OpenOptions::new().append(true).create(true).open(path)?;
        Ok(Writer { file })
    }

    /// Appends one record. A log that cannot be written is a run that
    /// cannot be judged: the caller fails the call with an I/O error.
    pub fn append(&self, event: &Event) -> std::io::Result<()> {
        (&self.file).write_all(&event.encode())
    }
}

/// What reading the log back found that the model cannot account for.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Strays {
    /// Files that had content the first time a crash VFS opened them: some
    /// connection wrote them without going through crashsim's VFS.
    pub unseen_writes: Vec<String>,
    /// A record that could not be decoded (a process killed mid-record
    /// cannot leave one: a record is one `write(2)`).
    pub garbled: bool,
}

/// Reads every record appended to the log at `path` into `state`, then
/// empties the log. `inner_is_unix`: see `State::synced`.
pub fn drain(path: &Path, state: &mut State, inner_is_unix: bool, strays: &mut Strays) -> std::io::Result<u64> {
    let mut file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(error),
    };
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    file.read_to_end(&mut bytes)?;
    let mut rest = bytes.as_slice();
    let mut records = 0;
    while rest.len() >= 4 {
        let length = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        if rest.len() < 4 + length {
            break;
        }
        let Some(event) = Event::decode(&rest[4..4 + length]) else {
            strays.garbled = true;
            break;
        };
        apply(state, event, inner_is_unix, strays);
        records += 1;
        rest = &rest[4 + length..];
    }
    if !rest.is_empty() {
        strays.garbled = true;
    }
    file.set_len(0)?;
    Ok(records)
}

/// Applies one logged change to the model.
pub fn apply(state: &mut State, event: Event, inner_is_unix: bool, strays: &mut Strays) {
    match event {
        Event::Opened { path, size } => {
            if state.knows(&path) {
                return;
            }
            let on_disk = match size {
                0 => Vec::new(),
                _ => {
                    strays.unseen_writes.push(path.clone());
                    std::fs::read(&path).unwrap_or_default()
                }
            };
            state.open(&path, on_disk);
        }
        Event::Write { path, offset, data } => state.change(&path, ContentOp::Write { offset, data }),
        Event::Truncate { path, size } => state.change(&path, ContentOp::Truncate { size }),
        Event::Synced { path, flags, syncs } => state.synced(&path, flags, syncs, inner_is_unix),
        Event::Deleted { path, sync_dir } => state.deleted(&path, sync_dir),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_round_trips() {
        let events = [
            Event::Opened {
                path: "/tmp/a b/store.db".into(),
                size: 0,
            },
            Event::Write {
                path: "/x-wal".into(),
                offset: 4096,
                data: vec![1, 2, 3],
            },
            Event::Truncate {
                path: "/x".into(),
                size: 9,
            },
            Event::Synced {
                path: "/x".into(),
                flags: 0x80004,
                syncs: 3,
            },
            Event::Deleted {
                path: "/x-journal".into(),
                sync_dir: true,
            },
        ];
        for event in events {
            let bytes = event.encode();
            let length = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
            assert_eq!(length, bytes.len() - 4);
            assert_eq!(Event::decode(&bytes[4..]), Some(event));
        }
        assert_eq!(Event::decode(&[9, 1, 2]), None);
        assert_eq!(Event::decode(&[WRITE, 1]), None);
    }
}
