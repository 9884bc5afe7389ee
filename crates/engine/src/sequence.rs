//! Sequences: named 64-bit counters for `serial` columns and `nextval`, kept in the meta tree.
//!
//! ```text
//! meta tree key        value
//! "seq/" ++ name       last value handed out (i64 LE); absent: the sequence does not exist
//! ```
//!
//! As in PostgreSQL, sequences are not transactional: a value handed out is never handed out again,
//! even if the transaction that took it rolls back. Each `next_value` writes the meta tree; the
//! change reaches the log before any commit that used the value is acknowledged (the log is
//! sequential), so after a crash a sequence never goes back below a committed value.

use crate::engine::Engine;
use crate::error::{EngineError, Result};

fn sequence_key(name: &str) -> Vec<u8> {
    let mut key = b"seq/".to_vec();
    key.extend_from_slice(name.as_bytes());
    key
}

fn no_sequence(name: &str) -> EngineError {
    EngineError::NoSuchTable(name.to_owned())
}

impl Engine {
    /// Creates a sequence starting at 1; an existing one is an error.
    pub fn create_sequence(&self, name: &str) -> Result<()> {
        let _guard = self.sequences.lock();
        let key = sequence_key(name);
        if self.meta.get(&key)?.is_some() {
            return Err(EngineError::DuplicateTable(name.to_owned()));
        }
        self.meta.insert(&key, &0i64.to_le_bytes())?;
        Ok(())
    }

    fn sequence_value(&self, key: &[u8], name: &str) -> Result<i64> {
        let bytes = self.meta.get(key)?.ok_or_else(|| no_sequence(name))?;
        let array: [u8; 8] = bytes
            .as_slice()
            .try_into()
            .map_err(|_| EngineError::Corrupt(format!("sequence {name}")))?;
        Ok(i64::from_le_bytes(array))
    }

    /// The next value of a sequence.
    pub fn next_value(&self, name: &str) -> Result<i64> {
        let _guard = self.sequences.lock();
        let key = sequence_key(name);
        let next = self
            .sequence_value(&key, name)?
            .checked_add(1)
            .ok_or_else(|| EngineError::Corrupt(format!("sequence {name} is exhausted")))?;
        self.meta.insert(&key, &next.to_le_bytes())?;
        Ok(next)
    }

    /// Sets the last value handed out (the next call returns `value + 1`).
    pub fn set_sequence(&self, name: &str, value: i64) -> Result<()> {
        let _guard = self.sequences.lock();
        let key = sequence_key(name);
        self.sequence_value(&key, name)?;
        self.meta.insert(&key, &value.to_le_bytes())?;
        Ok(())
    }

    /// Drops a sequence; a missing one is ignored.
    pub fn drop_sequence(&self, name: &str) -> Result<()> {
        let _guard = self.sequences.lock();
        self.meta.delete(&sequence_key(name))?;
        Ok(())
    }
}
