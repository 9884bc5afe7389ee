//! The one error type of the storage layer.
//!
//! Every fallible storage call returns [`Result`]. Corruption names the space and page it was found in,
//! so a checksum failure reaches the user as "page 17 of space 3 is corrupt: checksum mismatch" and is
//! never returned as data.

use crate::{PageNo, SpaceId};

/// Everything that can go wrong below the engine.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("I/O error while {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("page {page} of space {space} is corrupt: {reason}")]
    Corrupt {
        space: SpaceId,
        page: PageNo,
        reason: String,
    },
    #[error("key of {len} bytes is too large (at most {max} bytes with this page size)")]
    KeyTooLarge { len: usize, max: usize },
    #[error("value of {len} bytes is too large (at most {max} bytes)")]
    ValueTooLarge { len: usize, max: usize },
    #[error("buffer pool exhausted: all {frames} frames are pinned")]
    PoolExhausted { frames: usize },
    #[error("space {0} has been dropped")]
    SpaceDropped(SpaceId),
    #[error("invalid database format: {0}")]
    Format(String),
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// Result of every fallible storage operation.
pub type Result<T> = std::result::Result<T, StorageError>;

impl StorageError {
    /// Wraps an I/O error with what was being done when it happened.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        StorageError::Io {
            context: context.into(),
            source,
        }
    }

    /// A corruption report for one page.
    pub fn corrupt(space: SpaceId, page: PageNo, reason: impl Into<String>) -> Self {
        StorageError::Corrupt {
            space,
            page,
            reason: reason.into(),
        }
    }
}
