//! `StoreError`: what a store or receiver operation can answer besides success.

/// An operation's failure, sorted by what the caller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A stale writer: the workflow's head is no longer `expected_seq`.
    /// Reload, decide again.
    #[error("stale append: {workflow_id} is no longer at seq {expected_seq}")]
    Conflict { workflow_id: String, expected_seq: u64 },
    /// Another connection holds the lock (SQLITE_BUSY / SQLITE_LOCKED).
    /// Retry the same step later; nothing changed.
    #[error("database is busy")]
    Busy,
    /// The operation was accepted and waits for others to share its work:
    /// a group-commit store's `commit` queued the transaction for the next
    /// group. Ask again soon (no backoff: nothing is contended); the answer
    /// then is the transaction's real outcome.
    #[error("queued for a group commit: ask again")]
    Pending,
    /// The call is parked inside the store's SQLite, at the scheduling
    /// point named (`preempt`: another connection runs meanwhile). Ask
    /// again with the same arguments: the call goes on where it stopped,
    /// and that answer is its real outcome. `sql` is the statement the
    /// call's connection was running there, if crashsim saw it.
    #[error("preempted at {point}: ask again")]
    Preempted { point: String, sql: Option<String> },
    /// Bad input to the operation (for example an unknown command kind).
    #[error("{0}")]
    Invalid(String),
    /// Any other SQLite failure.
    #[error("sqlite: {0}")]
    Sqlite(rusqlite::Error),
    /// Any other failure of the store's own code, as it described it (an
    /// adapter's `failed` answer).
    #[error("{0}")]
    Failed(String),
    /// The store's process died (or stopped answering) without being
    /// killed: a crash of the code under test, which the checkers report.
    #[error("{0}")]
    Died(String),
    /// The store broke its contract with the harness (an adapter's
    /// malformed answer): the run cannot go on, and no verdict is given.
    #[error("{0}")]
    Broken(String),
    /// The environment failed under the store (a full disk, an I/O error,
    /// no memory), as an adapter reported it (`environment`): not the
    /// store's fault, so the run stops without a verdict.
    #[error("{0}")]
    Environment(String),
    /// The store does not offer this operation (an optional capability,
    /// such as leases, that it does not implement). The run cannot use it.
    #[error("not supported by this store: {0}")]
    Unsupported(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        if is_busy(&error) {
            StoreError::Busy
        } else {
            StoreError::Sqlite(error)
        }
    }
}

impl StoreError {
    /// An equal error, for answering every member of a group that failed as
    /// one (`rusqlite::Error` cannot be cloned; its code and message can).
    pub fn duplicate(&self) -> StoreError {
        match self {
            StoreError::Conflict {
                workflow_id,
                expected_seq,
            } => StoreError::Conflict {
                workflow_id: workflow_id.clone(),
                expected_seq: *expected_seq,
            },
            StoreError::Busy => StoreError::Busy,
            StoreError::Pending => StoreError::Pending,
            StoreError::Preempted { point, sql } => StoreError::Preempted {
                point: point.clone(),
                sql: sql.clone(),
            },
            StoreError::Invalid(message) => StoreError::Invalid(message.clone()),
            StoreError::Failed(message) => StoreError::Failed(message.clone()),
            StoreError::Died(message) => StoreError::Died(message.clone()),
            StoreError::Broken(message) => StoreError::Broken(message.clone()),
            StoreError::Environment(message) => StoreError::Environment(message.clone()),
            StoreError::Unsupported(message) => StoreError::Unsupported(message.clone()),
            StoreError::Sqlite(rusqlite::Error::SqliteFailure(code, message)) => {
                StoreError::Sqlite(rusqlite::Error::SqliteFailure(*code, message.clone()))
            }
            StoreError::Sqlite(other) => StoreError::Sqlite(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
                Some(other.to_string()),
            )),
        }
    }
}

impl StoreError {
    /// Whether SQLite found the file damaged (`SQLITE_CORRUPT`,
    /// `SQLITE_NOTADB`): a verdict on what a crash left, not an error of
    /// the environment.
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            StoreError::Sqlite(error) if matches!(
                error.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
            )
        )
    }
}

impl StoreError {
    /// What failed in the environment, if this error is the machine's and
    /// not the store's: SQLite's `FULL`, `IOERR`, `CANTOPEN`, `NOMEM`,
    /// `PERM` and `NOLFS` (in every extended form), or an adapter's
    /// `environment` answer. A fault crashsim injected (the crash VFS's
    /// answer at a power cut) looks the same here: the simulator tells the
    /// two apart, since it knows when it cut the power.
    pub fn environment(&self) -> Option<String> {
        match self {
            StoreError::Environment(message) => Some(message.clone()),
            StoreError::Sqlite(error) => {
                let what = match error.sqlite_error_code()? {
                    rusqlite::ErrorCode::DiskFull => "the work directory is full",
                    rusqlite::ErrorCode::SystemIoFailure => "an I/O error in the work directory",
                    rusqlite::ErrorCode::CannotOpen => "a database file cannot be opened",
                    rusqlite::ErrorCode::OutOfMemory => "out of memory",
                    rusqlite::ErrorCode::PermissionDenied => "permission denied",
                    rusqlite::ErrorCode::NoLargeFileSupport => "the file system refuses large files",
                    _ => return None,
                };
                match error {
                    // The extended code says which call failed (522: a
                    // short read, 1034: an fsync, 3850: a lock, ...).
                    rusqlite::Error::SqliteFailure(code, _) if code.extended_code > 0xff => {
                        Some(format!("{what} ({error}; extended code {})", code.extended_code))
                    }
                    _ => Some(format!("{what} ({error})")),
                }
            }
            _ => None,
        }
    }
}

/// True for SQLITE_BUSY and SQLITE_LOCKED in all their extended forms.
pub fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// True for a UNIQUE or PRIMARY KEY violation.
pub fn is_constraint(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::ConstraintViolation)
    )
}
