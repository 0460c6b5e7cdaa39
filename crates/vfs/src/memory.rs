//! File contents held in memory, for runs whose actors die only as
//! processes do.
//!
//! An in-process kill closes a connection; what it wrote stays where the
//! kernel's page cache would have kept it. Such a run never needs bytes to
//! reach a disk, so a shim VFS with [`Images`] keeps the bytes of each
//! database, WAL and rollback journal in memory: reads, writes, truncations,
//! sizes and syncs never reach the kernel. Everything else still does:
//! every open creates the real (empty) file, locks are the inner VFS's
//! `fcntl` locks on it, and the WAL index is its real shared memory. So
//! connections see each other exactly as they would through the real
//! files, with the same locking, and SQLite's file format is unchanged.
//!
//! [`Images::flush`] writes every image to its path when the run is over,
//! so that what reads the files afterwards (`--keep-failed`, reports, a
//! later replay) finds them as the run left them.
//!
//! Power-loss runs keep the crash VFS (real files and its durable images);
//! process mode keeps real files.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

/// One file's bytes.
#[derive(Debug, Default)]
pub struct Image {
    bytes: Mutex<Vec<u8>>,
}

impl Image {
    fn with(bytes: Vec<u8>) -> Image {
        Image {
            bytes: Mutex::new(bytes),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.bytes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Fills `out` from `offset`; false (the rest zeroed) if the file is
    /// shorter: SQLite's short read.
    pub fn read(&self, out: &mut [u8], offset: u64) -> bool {
        let bytes = self.lock();
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
        let available = (bytes.len() - start).min(out.len());
        out[..available].copy_from_slice(&bytes[start..start + available]);
        out[available..].fill(0);
        available == out.len()
    }

    /// Writes `data` at `offset`, growing the file (with zeros) as needed.
    pub fn write(&self, data: &[u8], offset: u64) {
        let mut bytes = self.lock();
        let start = usize::try_from(offset).expect("SQLite file offsets fit in memory");
        let end = start + data.len();
        if bytes.len() < end {
            bytes.resize(end, 0);
        }
        bytes[start..end].copy_from_slice(data);
    }

    /// Cuts (or grows, with zeros) the file to `size` bytes.
    pub fn truncate(&self, size: u64) {
        let size = usize::try_from(size).expect("SQLite file sizes fit in memory");
        self.lock().resize(size, 0);
    }

    pub fn len(&self) -> u64 {
        self.lock().len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The images of one VFS registration, by absolute path.
#[derive(Debug, Default)]
pub struct Images {
    files: Mutex<BTreeMap<String, Arc<Image>>>,
}

impl Images {
    fn files(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Image>>> {
        self.files.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The image of `path`, shared by every handle open on it. A file not
    /// yet known starts as what the real file holds (nothing, for a file
    /// the open just created).
    pub fn open(&self, path: &str) -> io::Result<Arc<Image>> {
        let mut files = self.files();
        if let Some(image) = files.get(path) {
            return Ok(Arc::clone(image));
        }
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(error) => return Err(error),
        };
        let image = Arc::new(Image::with(bytes));
        files.insert(path.to_string(), Arc::clone(&image));
        Ok(image)
    }

    /// Whether `path` exists as `xAccess(SQLITE_ACCESS_EXISTS)` means it (a
    /// file with bytes), if this registration holds it; `None` if not.
    pub fn exists(&self, path: &str) -> Option<bool> {
        self.files().get(path).map(|image| !image.is_empty())
    }

    /// The bytes of `path`, if this registration holds it (a copy).
    pub fn bytes(&self, path: &str) -> Option<Vec<u8>> {
        self.files().get(path).map(|image| image.lock().clone())
    }

    /// `path` was deleted: a later open starts empty.
    pub fn forget(&self, path: &str) {
        self.files().remove(path);
    }

    /// Writes every image to its real file and lets the images go. Handles
    /// still open keep their own image; a later open reads the real file.
    pub fn flush(&self) -> io::Result<()> {
        let files = std::mem::take(&mut *self.files());
        for (path, image) in files {
            std::fs::write(&path, &*image.lock())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_end_are_short_and_zeroed() {
        let image = Image::default();
        image.write(b"abc", 2);
        assert_eq!(image.len(), 5);
        let mut out = [9u8; 4];
        assert!(!image.read(&mut out, 3));
        assert_eq!(out, [b'b', b'c', 0, 0]);
        let mut out = [9u8; 2];
        assert!(image.read(&mut out, 0));
        assert_eq!(out, [0, 0]);
        image.truncate(1);
        assert_eq!(image.len(), 1);
    }

    #[test]
    fn images_start_as_the_real_file_and_flush_back_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        std::fs::write(&path, b"on disk").unwrap();
        let images = Images::default();
        let key = path.to_str().unwrap();
        let image = images.open(key).unwrap();
        assert_eq!(images.exists(key), Some(true));
        image.write(b"IN", 0);
        assert_eq!(std::fs::read(&path).unwrap(), b"on disk");
        images.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"IN disk");
        assert_eq!(images.exists(key), None);
        let fresh = images.open(dir.path().join("b.db").to_str().unwrap()).unwrap();
        assert!(fresh.is_empty());
        images.forget(dir.path().join("b.db").to_str().unwrap());
        assert_eq!(images.exists(dir.path().join("b.db").to_str().unwrap()), None);
    }
}
