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

use crate::engine::{Engine, Transaction};
use crate::error::{EngineError, Result};

const SEQUENCE_PREFIX: &[u8] = b"seq/";

fn sequence_key(name: &str) -> Vec<u8> {
    let mut key = SEQUENCE_PREFIX.to_vec();
    key.extend_from_slice(name.as_bytes());
    key
}

fn no_sequence(name: &str) -> EngineError {
    EngineError::NoSuchTable(name.to_owned())
}

impl Transaction {
    /// The next value of a sequence, for this transaction: its commit makes the sequence's
    /// advance durable even if the transaction wrote nothing else (as PostgreSQL's commit flushes
    /// the WAL a `nextval` wrote).
    pub fn next_sequence_value(&mut self, name: &str) -> Result<i64> {
        let value = self.engine.next_value(name)?;
        self.used_sequence = true;
        Ok(value)
    }

    /// Sets a sequence's last value, durable at this transaction's commit (see
    /// [`Transaction::next_sequence_value`]).
    pub fn set_sequence_value(&mut self, name: &str, last: i64) -> Result<()> {
        self.engine.set_sequence(name, last)?;
        self.used_sequence = true;
        Ok(())
    }
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

    /// Whether sequence `name` exists.
    pub fn sequence_exists(&self, name: &str) -> Result<bool> {
        Ok(self.meta.get(&sequence_key(name))?.is_some())
    }

    /// Every sequence's name, in order.
    pub fn sequences(&self) -> Result<Vec<String>> {
        let mut names = Vec::new();
        let start = std::ops::Bound::Included(SEQUENCE_PREFIX);
        for entry in self.meta.range(start, std::ops::Bound::Unbounded) {
            let (key, _) = entry?;
            let Some(name) = key.strip_prefix(SEQUENCE_PREFIX) else {
                break;
            };
            names.push(String::from_utf8_lossy(name).into_owned());
        }
        Ok(names)
    }

    /// Drops a sequence; a missing one is ignored.
    pub fn drop_sequence(&self, name: &str) -> Result<()> {
        let _guard = self.sequences.lock();
        self.meta.delete(&sequence_key(name))?;
        Ok(())
    }
}
