//! Atomic file writes: a temporary file in the same directory, synced, then
//! renamed over the target, so a reader (or a crash) never sees half a report.

use std::fs;
use std::io::Write;
use std::path::Path;

pub fn write(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    // Created as any output file is, 0666 less the umask (a temporary
    // file would be owner-only, which breaks CI uploads and shared folders).
    let mut file = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)?;
    file.write_all(contents)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|error| error.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn writes_and_replaces_whole_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/report.json");
        super::write(&path, b"one").unwrap();
        super::write(&path, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    #[test]
    fn files_get_the_umasks_mode_like_any_output() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        super::write(&path, b"{}").unwrap();
        // The umask as this process has it (set and restored at once).
        let umask = unsafe { libc::umask(0o022) };
        unsafe { libc::umask(umask) };
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666 & !(umask as u32), "mode {mode:o}, umask {umask:o}");
    }
}
