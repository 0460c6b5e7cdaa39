//! The loadable extension (`crashsim_vfs::extension`) that outside stores
//! load into their own SQLite, carried inside this binary so that an
//! installed crashsim needs nothing beside it. `path` writes it out once per
//! machine and version, under a name made of its own hash, atomically:
//! several crashsims at once, of one version or several, never see a
//! half-written or wrong file.

use std::path::PathBuf;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// The extension's bytes (`build.rs` compiles it).
pub static BYTES: &[u8] = include_bytes!(env!("CRASHSIM_VFS_EXTENSION"));

/// The environment variable an adapter process finds the extension's path in.
pub const ENV_EXTENSION: &str = "CRASHSIM_VFS_EXTENSION";
pub use crashsim_vfs::extension::ENV_STATE;

/// The extension's entry point (what SQLite derives from the file's name).
pub const ENTRY_POINT: &str = "sqlite3_crashsimvfs_init";

/// The extension as a file: `$TMPDIR/crashsim-vfs-<hash>/libcrashsim_vfs.so`.
pub fn path() -> Result<PathBuf, String> {
    static PATH: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PATH.get_or_init(write_out).clone()
}

fn write_out() -> Result<PathBuf, String> {
    let digest = crate::store::service::hex16(&Sha256::digest(BYTES));
    let dir = std::env::temp_dir().join(format!("crashsim-vfs-{digest}"));
    let path = dir.join("libcrashsim_vfs.so");
    if std::fs::read(&path).is_ok_and(|bytes| bytes == BYTES) {
        return Ok(path);
    }
    let fail = |error: std::io::Error| format!("writing crashsim's VFS extension to {}: {error}", dir.display());
    std::fs::create_dir_all(&dir).map_err(fail)?;
    let mut temporary = tempfile::NamedTempFile::new_in(&dir).map_err(fail)?;
    std::io::Write::write_all(&mut temporary, BYTES).map_err(fail)?;
    temporary.persist(&path).map_err(|error| fail(error.error))?;
    Ok(path)
}
