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
    /// Bad input to the operation (for example an unknown command kind).
    #[error("{0}")]
    Invalid(String),
    /// Any other SQLite failure.
    #[error("sqlite: {0}")]
    Sqlite(rusqlite::Error),
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
