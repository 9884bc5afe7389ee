//! Sequences: named 64-bit counters for `serial` columns and `nextval`, kept in the meta tree.
//!
//! ```text
//! meta tree key        value
//! "seq/" ++ name       last value handed out (i64 LE), then the first value (i64 LE; absent in
//!                      sequences made before it was kept: 1), then the width in bytes of the
//!                      integer type it counts in (u8: 2, 4 or 8; absent: 8), whose maximum it
//!                      never passes (2200H); no key: the sequence does not exist
//! ```
//!
//! As in PostgreSQL, sequence values are not transactional: a value handed out is never handed out
//! again, even if the transaction that took it rolls back. Creating and dropping a sequence is a
//! write of the transaction that does it, undone with it. Each `next_value` writes the meta tree; the
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

/// A sequence's stored state.
struct SequenceState {
    last: i64,
    start: i64,
    width: u8,
}

/// The largest value a sequence counting in an integer of `width` bytes hands out.
pub fn sequence_max(width: u8) -> i64 {
    match width {
        2 => i64::from(i16::MAX),
        4 => i64::from(i32::MAX),
        _ => i64::MAX,
    }
}

impl SequenceState {
    fn decode(bytes: &[u8], name: &str) -> Result<SequenceState> {
        let word = |at: usize| -> Option<i64> {
            Some(i64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
        };
        let corrupt = || EngineError::Corrupt(format!("sequence {name}"));
        match bytes.len() {
            8 => Ok(SequenceState {
                last: word(0).ok_or_else(corrupt)?,
                start: 1,
                width: 8,
            }),
            16 | 17 => Ok(SequenceState {
                last: word(0).ok_or_else(corrupt)?,
                start: word(8).ok_or_else(corrupt)?,
                width: bytes.get(16).copied().unwrap_or(8),
            }),
            _ => Err(corrupt()),
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut bytes = self.last.to_le_bytes().to_vec();
        bytes.extend_from_slice(&self.start.to_le_bytes());
        bytes.push(self.width);
        bytes
    }
}

impl Transaction {
    /// Creates a sequence whose first value is `start`, counting in an integer of `width` bytes
    /// (2, 4 or 8); an existing one is an error. The sequence's creation (not the values it
    /// hands out) is undone with the transaction.
    pub fn create_sequence(&mut self, name: &str, start: i64, width: u8) -> Result<()> {
        let engine = self.engine();
        self.claim(name)?;
        let _guard = engine.sequences.lock();
        let key = sequence_key(name);
        if engine.meta.get(&key)?.is_some() {
            return Err(EngineError::DuplicateTable(name.to_owned()));
        }
        let last = start
            .checked_sub(1)
            .ok_or_else(|| EngineError::Corrupt(format!("sequence {name} starts below i64")))?;
        let state = SequenceState { last, start, width };
        self.write_catalog(&key, Some(&state.encode()))
    }

    /// Drops a sequence (undone with the transaction); a missing one is ignored.
    pub fn drop_sequence(&mut self, name: &str) -> Result<()> {
        let engine = self.engine();
        self.claim(name)?;
        let _guard = engine.sequences.lock();
        let key = sequence_key(name);
        if engine.meta.get(&key)?.is_some() {
            self.write_catalog(&key, None)?;
        }
        Ok(())
    }
}

impl Engine {
    fn sequence_state(&self, key: &[u8], name: &str) -> Result<SequenceState> {
        let bytes = self.meta.get(key)?.ok_or_else(|| no_sequence(name))?;
        SequenceState::decode(&bytes, name)
    }

    /// The next value of a sequence.
    pub fn next_value(&self, name: &str) -> Result<i64> {
        let _guard = self.sequences.lock();
        let key = sequence_key(name);
        let mut state = self.sequence_state(&key, name)?;
        let max = sequence_max(state.width);
        state.last = state
            .last
            .checked_add(1)
            .filter(|next| *next <= max)
            .ok_or_else(|| EngineError::SequenceExhausted {
                name: name.to_owned(),
                max,
            })?;
        self.meta.insert(&key, &state.encode())?;
        Ok(state.last)
    }

    /// Sets the last value handed out (the next call returns `value + 1`).
    pub fn set_sequence(&self, name: &str, value: i64) -> Result<()> {
        let _guard = self.sequences.lock();
        let key = sequence_key(name);
        let mut state = self.sequence_state(&key, name)?;
        state.last = value;
        self.meta.insert(&key, &state.encode())?;
        Ok(())
    }

    /// The last value sequence `name` handed out (its start minus one before the first).
    pub fn sequence_last(&self, name: &str) -> Result<i64> {
        Ok(self.sequence_state(&sequence_key(name), name)?.last)
    }

    /// The width in bytes of the integer type sequence `name` counts in (2, 4 or 8).
    pub fn sequence_width(&self, name: &str) -> Result<u8> {
        Ok(self.sequence_state(&sequence_key(name), name)?.width)
    }

    /// The first value sequence `name` hands out (its `START WITH`).
    pub fn sequence_start(&self, name: &str) -> Result<i64> {
        Ok(self.sequence_state(&sequence_key(name), name)?.start)
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
}
