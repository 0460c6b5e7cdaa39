//! Built-in stores served one process per connection when a scenario
//! suspends calls inside SQLite (`[preempt]`): a suspension parks the
//! connection's process, so the store must be in processes of its own, as
//! `--mode process` runs it (the same trace either way). The executable
//! that serves them (`crashsim serve`) is the CLI's own, which it names at
//! start; a library user's program is not crashsim, so without it such a
//! scenario stops with the cause (exit code 2).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::adapter::Adapter;

static SERVER: OnceLock<PathBuf> = OnceLock::new();
static ADAPTERS: Mutex<BTreeMap<String, Arc<Adapter>>> = Mutex::new(BTreeMap::new());

/// `exe` serves built-in stores (`exe serve NAME`): the CLI's own executable.
pub fn serve_builtins_with(exe: PathBuf) {
    let _ = SERVER.set(exe);
}

/// The adapter that serves built-in store `name` one process per
/// connection, probed once per process; `None` where nothing can serve it.
pub fn adapter(name: &str) -> Result<Option<Arc<Adapter>>, String> {
    let Some(exe) = SERVER.get() else {
        return Ok(None);
    };
    let mut adapters = ADAPTERS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(adapter) = adapters.get(name) {
        return Ok(Some(Arc::clone(adapter)));
    }
    let adapter = Adapter::serve(exe, name, crate::adapter::DEFAULT_TIMEOUT, true)
        .map(Arc::new)
        .map_err(|error| format!("serving {name} one process per connection: {error}"))?;
    adapters.insert(name.to_string(), Arc::clone(&adapter));
    Ok(Some(adapter))
}
