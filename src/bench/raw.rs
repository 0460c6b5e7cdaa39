//! The limit: durable-write loops with no database, on the same directory.
//!
//! - overwrite + `fsync`: blocks of a preallocated, already synced region,
//!   in turn. A WAL after its first checkpoint is rewritten in place like
//!   this, so it bounds what one connection committing one transaction at a
//!   time can reach under `synchronous=FULL`.
//! - overwrite + `fdatasync`: the same with the sync SQLite uses when it is
//!   built with `HAVE_FDATASYNC` (most system builds, hence most outside
//!   stores; crashsim's bundled SQLite is not, and calls `fsync`). It skips
//!   the inode's timestamps, so on some disks it is the faster limit.
//! - WAL frames + `fsync`: the same, but written as SQLite writes a commit
//!   to its WAL: per page a 24-byte frame header, then the 4 KiB page, at
//!   offsets 32 + n × 4120, so frames straddle blocks. One event's append
//!   writes two (a table page and an index page): 8 KiB over three blocks,
//!   which the disk syncs more slowly than one block.
//! - append + `fdatasync`: a file that grows with every write, so each sync
//!   also carries the new size (a metadata update).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::measure::{Budget, Sample, timed_loop};

/// Blocks in the overwritten region (1 MiB of 4 KiB blocks).
const REGION_BLOCKS: u64 = 256;

/// A block of non-zero bytes: what is written does not matter, that it
/// reaches the disk does.
fn block(bytes: usize) -> Vec<u8> {
    (0..bytes).map(|index| (index % 251) as u8 + 1).collect()
}

/// `path`, opened for writing, at least `bytes` long and synced: a region
/// that later writes overwrite in place.
fn preallocated(path: &Path, bytes: u64) -> io::Result<File> {
    if std::fs::metadata(path).map(|meta| meta.len()).unwrap_or(0) < bytes {
        let file = File::create(path)?;
        file.write_all_at(&vec![0xa5; bytes as usize], 0)?;
        file.sync_all()?;
    }
    OpenOptions::new().write(true).open(path)
}

/// Warms up, then times `write` (one durable write, one sync per call).
fn measured(budget: Budget, mut write: impl FnMut() -> io::Result<u64>) -> io::Result<Sample> {
    for _ in 0..budget.warmup_ops {
        write()?;
    }
    let mut sample = timed_loop(budget.sample, write)?;
    sample.fsyncs = sample.commits;
    Ok(sample)
}

/// `bytes` over a preallocated region of `dir/overwrite.dat`, then `fsync`
/// (or `fdatasync`, with `data_only`).
pub fn overwrite_fsync(dir: &Path, bytes: usize, budget: Budget, data_only: bool) -> io::Result<Sample> {
    let file = preallocated(&dir.join("overwrite.dat"), REGION_BLOCKS * bytes as u64)?;
    let data = block(bytes);
    let mut next = 0u64;
    measured(budget, || {
        file.write_all_at(&data, (next % REGION_BLOCKS) * bytes as u64)?;
        if data_only {
            file.sync_data()?;
        } else {
            file.sync_all()?;
        }
        next += 1;
        Ok(1)
    })
}

/// `frames` WAL-shaped frames over a preallocated region of
/// `dir/frames.dat`, in turn, then `fsync`.
pub fn wal_frames_fsync(dir: &Path, frames: usize, budget: Budget) -> io::Result<Sample> {
    const HEADER: u64 = 32;
    const FRAME: u64 = 24 + 4096;
    let region_frames = REGION_BLOCKS;
    let file = preallocated(&dir.join("frames.dat"), HEADER + region_frames * FRAME)?;
    let (header, page) = (block(24), block(4096));
    let mut next = 0u64;
    measured(budget, || {
        for _ in 0..frames {
            let offset = HEADER + (next % region_frames) * FRAME;
            file.write_all_at(&header, offset)?;
            file.write_all_at(&page, offset + 24)?;
            next += 1;
        }
        file.sync_all()?;
        Ok(1)
    })
}

/// `bytes` appended to a fresh `dir/append.dat`, then `fdatasync`.
pub fn append_fdatasync(dir: &Path, bytes: usize, budget: Budget) -> io::Result<Sample> {
    let file = File::create(dir.join("append.dat"))?;
    file.sync_all()?;
    let data = block(bytes);
    let mut length = 0u64;
    measured(budget, || {
        file.write_all_at(&data, length)?;
        file.sync_data()?;
        length += bytes as u64;
        Ok(1)
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn both_loops_write_what_they_count() {
        let dir = tempfile::tempdir().unwrap();
        let budget = Budget {
            sample: Duration::from_millis(5),
            warmup_ops: 2,
        };
        let sample = overwrite_fsync(dir.path(), 4096, budget, false).unwrap();
        assert!(sample.commits >= 1 && sample.fsyncs == sample.commits);
        let sample = overwrite_fsync(dir.path(), 4096, budget, true).unwrap();
        assert!(sample.commits >= 1 && sample.fsyncs == sample.commits);
        assert_eq!(
            std::fs::metadata(dir.path().join("overwrite.dat")).unwrap().len(),
            256 * 4096
        );
        let sample = wal_frames_fsync(dir.path(), 2, budget).unwrap();
        assert!(sample.commits >= 1 && sample.fsyncs == sample.commits);
        assert_eq!(
            std::fs::metadata(dir.path().join("frames.dat")).unwrap().len(),
            32 + 256 * 4120
        );
        let sample = append_fdatasync(dir.path(), 200, budget).unwrap();
        let length = std::fs::metadata(dir.path().join("append.dat")).unwrap().len();
        assert_eq!(length, (sample.commits + 2) * 200, "warm-up and timed writes appended");
    }
}
