//! Formats of row versions: in place in a clustered index, in the history store, and in the undo log.
//!
//! ```text
//! clustered record value   flags u8 | writer txn u64 | row bytes        flags bit 0: deleted
//!                          bit 1 (with bit 0): the mark keeps the row it deleted, whose writer
//!                          had settled (see `Version::kept`)
//! history key              index u64 BE | pk length u32 BE | pk | !start csn u64 BE
//! history value            flags u8 | writer txn u64 | superseded by txn u64 | row bytes
//! undo key                 txn u64 BE | sequence u64 BE        (sequence u64::MAX: commit marker)
//! undo value               kind u8 | index u64 | pk length u32 | pk | previous start csn u64
//!                          kind 1: the transaction inserted the row (no previous version)
//!                          kind 2: the previous version went to history under its start csn
//!                                  (or, start 0, stays in this transaction's delete mark)
//!                          kind 3: the transaction added a secondary-index entry (pk = its key)
//!                          kind 4: the transaction inserted rows under keys pk..=last, where no
//!                                  key was when it logged this: remove its versions there
//!                          (kind 4 ends with last length u32 | last instead of the start csn)
//!                          kind 5: several entries of one index (UPDATE and DELETE batches):
//!                                  index u64 | count u32 | per entry its length u32 and its
//!                                  value above without the index
//! ```
//!
//! A version's *start* is the CSN of the transaction that wrote it. History keys put the versions of
//! one row together, newest first, so the version a snapshot `S` needs is the first entry at or after
//! `(index, pk, !S)`: one seek, however many versions there are. The pk is length-prefixed so that
//! no row's entries interleave with another's.

use crate::error::{EngineError, Result};
use crate::txn::{Csn, TxnId};

/// Identifies an index (a B+tree) across the whole database.
pub type IndexId = u64;

const DELETED: u8 = 1;
/// With DELETED: the mark keeps the row it deleted (see [`Version::kept`]).
const KEPT: u8 = 2;
const HEADER: usize = 9;

/// The writer a kept row is restored with: an id no transaction gets, which every snapshot sees
/// as committed (as it sees the kept row's own writer, which had settled: see `Version::kept`).
pub const SETTLED_WRITER: TxnId = 0;

/// A clustered record: who wrote it, whether it is a delete mark, and the row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub writer: TxnId,
    pub deleted: bool,
    /// A delete mark that keeps the row it deleted (`row`), as InnoDB's delete-marked records keep
    /// their fields — only a row whose writer had settled (every snapshot sees it, its start is
    /// 0), so the mark is exactly as long as the row's record was and needs no other field: a
    /// snapshot that does not see the delete reads the row in the mark, and a delete writes no
    /// copy of it to history. The row leaves its mark only to history under start 0 (when the
    /// mark is replaced: `Transaction::first_write`, `first_write_log`) or with it (purge).
    pub kept: bool,
    pub row: Vec<u8>,
}

impl Version {
    pub fn encode(&self) -> Vec<u8> {
        match (self.deleted, self.kept) {
            (true, true) => encode_with_header(DELETED | KEPT, self.writer, &self.row),
            (true, false) => encode_with_header(DELETED, self.writer, &[]),
            (false, _) => encode_with_header(0, self.writer, &self.row),
        }
    }

    /// The encoding of a live (not deleted) version of `row` by `writer`, without building a
    /// [`Version`] (and a copy of the row) first.
    pub fn encode_live(writer: TxnId, row: &[u8]) -> Vec<u8> {
        encode_with_header(0, writer, row)
    }

    /// A delete mark by `writer` keeping `row`, whose writer had settled.
    pub fn encode_kept_mark(writer: TxnId, row: &[u8]) -> Vec<u8> {
        encode_with_header(DELETED | KEPT, writer, row)
    }

    /// A delete mark by `writer` that keeps no row.
    pub fn encode_mark(writer: TxnId) -> Vec<u8> {
        encode_with_header(DELETED, writer, &[])
    }

    pub fn decode(bytes: &[u8]) -> Result<Version> {
        let (flags, writer, row) = split_record(bytes)?;
        Ok(Version {
            writer,
            deleted: flags & DELETED != 0,
            kept: flags & KEPT != 0,
            row: row.to_vec(),
        })
    }

    /// As [`Version::decode`], keeping the record's own buffer for the row (no copy of it into
    /// a new one: scans decode every record they read).
    pub fn from_record(mut record: Vec<u8>) -> Result<Version> {
        let (flags, writer, _) = split_record(&record)?;
        record.drain(..HEADER);
        Ok(Version {
            writer,
            deleted: flags & DELETED != 0,
            kept: flags & KEPT != 0,
            row: record,
        })
    }

    /// The row a kept mark keeps, as the live version it was (by [`SETTLED_WRITER`]).
    pub fn kept_version(&self) -> Option<Version> {
        (self.deleted && self.kept).then(|| Version {
            writer: SETTLED_WRITER,
            deleted: false,
            kept: false,
            row: self.row.clone(),
        })
    }

    /// This version without a kept row (a kept mark becomes a plain mark).
    pub fn without_kept(&self) -> Version {
        match self.kept {
            true => Version {
                writer: self.writer,
                deleted: self.deleted,
                kept: false,
                row: Vec::new(),
            },
            false => self.clone(),
        }
    }
}

impl Version {
    /// A clustered record restamped as written by `writer`, or None for a delete mark: a table
    /// rebuild copies the records it keeps as they are, without decoding and encoding each.
    pub fn restamped_live(mut record: Vec<u8>, writer: TxnId) -> Result<Option<Vec<u8>>> {
        let (flags, _, _) = split_header(&record, "row version")?;
        if flags & DELETED != 0 {
            return Ok(None);
        }
        record[1..HEADER].copy_from_slice(&writer.to_le_bytes());
        Ok(Some(record))
    }

    /// The writer of a clustered record and whether it is a delete mark, read in place.
    pub fn in_record(record: &[u8]) -> Result<(TxnId, bool)> {
        split_header(record, "row version").map(|(flags, writer, _)| (writer, flags & DELETED != 0))
    }

    /// The row bytes of a live clustered record (a kept mark's row), read in place. Inlined: a
    /// scan calls it once per row (see `Scan::next_entry`).
    #[inline]
    pub fn record_row(record: &[u8]) -> Result<&[u8]> {
        split_record(record).map(|(_, _, row)| row)
    }
}

/// A version in the history store: the row as it was, who wrote it, and who replaced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OldVersion {
    pub version: Version,
    pub superseded_by: TxnId,
}

impl OldVersion {
    /// History keeps no kept row in a mark: the row goes in under its own start, 0 (see
    /// [`Version::kept`]).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.version.without_kept().encode();
        out.splice(HEADER..HEADER, self.superseded_by.to_le_bytes());
        out
    }

    /// Whether the encoded history entry `bytes` names `txn` as the writer that replaced it.
    pub fn superseded_by_is(bytes: &[u8], txn: TxnId) -> bool {
        bytes
            .get(HEADER..HEADER + 8)
            .is_some_and(|id| id == txn.to_le_bytes())
    }

    pub fn decode(bytes: &[u8]) -> Result<OldVersion> {
        if bytes.len() < HEADER + 8 {
            return Err(EngineError::Corrupt(format!(
                "history entry of {} bytes",
                bytes.len()
            )));
        }
        let superseded_by =
            u64::from_le_bytes(bytes[HEADER..HEADER + 8].try_into().expect("8 bytes"));
        let mut version = Version::decode(&bytes[..HEADER])?;
        version.row = bytes[HEADER + 8..].to_vec();
        Ok(OldVersion {
            version,
            superseded_by,
        })
    }
}

fn encode_with_header(flags: u8, txn: TxnId, row: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + row.len());
    out.push(flags);
    out.extend_from_slice(&txn.to_le_bytes());
    out.extend_from_slice(row);
    out
}

/// A clustered record's flags, writer and row bytes (a kept mark is always a delete mark).
#[inline]
fn split_record(bytes: &[u8]) -> Result<(u8, TxnId, &[u8])> {
    let (flags, writer, row) = split_header(bytes, "row version")?;
    if flags & KEPT != 0 && flags & DELETED == 0 {
        return Err(bad_flags(flags));
    }
    Ok((flags, writer, row))
}

#[cold]
fn bad_flags(flags: u8) -> EngineError {
    EngineError::Corrupt(format!("row version with flags {flags:#x}"))
}

#[inline]
fn split_header<'b>(bytes: &'b [u8], what: &str) -> Result<(u8, TxnId, &'b [u8])> {
    if bytes.len() < HEADER {
        return Err(too_short(what, bytes.len()));
    }
    let txn = u64::from_le_bytes(bytes[1..HEADER].try_into().expect("8 bytes"));
    Ok((bytes[0], txn, &bytes[HEADER..]))
}

#[cold]
fn too_short(what: &str, len: usize) -> EngineError {
    EngineError::Corrupt(format!("{what} of {len} bytes"))
}

/// The history-store prefix of every version of one row.
pub fn history_prefix(index: IndexId, pk: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(12 + pk.len() + 8);
    key.extend_from_slice(&index.to_be_bytes());
    key.extend_from_slice(&(pk.len() as u32).to_be_bytes());
    key.extend_from_slice(pk);
    key
}

/// The history-store key of the version of a row that started at `start`.
pub fn history_key(index: IndexId, pk: &[u8], start: Csn) -> Vec<u8> {
    let mut key = history_prefix(index, pk);
    key.extend_from_slice(&(!start).to_be_bytes());
    key
}

/// The largest history key a version of the row can have (that of start CSN 0): the inclusive end
/// of a range over the row's versions, so that a read of them stops at the row's last one instead
/// of copying the rest of the leaf.
pub fn history_last(index: IndexId, pk: &[u8]) -> Vec<u8> {
    history_key(index, pk, 0)
}

/// The start CSN in a history key.
pub fn history_start(key: &[u8]) -> Csn {
    !u64::from_be_bytes(key[key.len() - 8..].try_into().expect("8 bytes"))
}

/// What an undo entry says to do to roll a write back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UndoAction {
    /// The row was inserted: remove it.
    Inserted,
    /// The row replaced a version that started at this CSN, now in history: put it back.
    Replaced { previous_start: Csn },
    /// A secondary-index entry (`pk` holds its whole key) was added: remove it.
    IndexEntry,
    /// Rows were inserted under keys from `pk` to `last`, a range that held no key when this was
    /// logged: remove every version of this transaction there. A bulk load logs one such entry
    /// per batch of ascending new keys instead of one per row; a version of another transaction
    /// in the range is never its, and one of its own that an older entry must restore cannot be
    /// there (the range was empty), while newer entries are undone first.
    InsertedRange { last: Vec<u8> },
    /// The meta-tree entry under `pk` (a table, view or sequence definition; `index` is the meta
    /// tree's) held `before` (None: nothing): put it back. Logged before the entry changes.
    Catalog { before: Option<Vec<u8>> },
    /// A space, or a tree in it, was created for this transaction's DDL (see [`StorageObject`]):
    /// drop it. Logged (and the log made durable) before the object exists.
    Created,
    /// A space, or a tree in it, is no longer used by the catalog this transaction leaves: purge
    /// drops it once the transaction has committed and no snapshot older than it is open; a
    /// rollback keeps it.
    Dropped,
}

impl UndoAction {
    /// Whether the entry is a row write (of a clustered index or a secondary entry), not a
    /// catalog change.
    pub fn is_row_write(&self) -> bool {
        !matches!(
            self,
            UndoAction::Catalog { .. } | UndoAction::Created | UndoAction::Dropped
        )
    }
}

/// The space, or the tree in a space, a `Created` or `Dropped` undo entry names: the entry's
/// `index` is the tree's id (0 for the whole space) and its `pk` the space id (u32 BE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageObject {
    pub space: steady_storage::SpaceId,
    /// None: the whole space.
    pub tree: Option<IndexId>,
}

impl StorageObject {
    pub fn entry(self, action: UndoAction) -> UndoEntry {
        UndoEntry {
            index: self.tree.unwrap_or(0),
            pk: self.space.to_be_bytes().to_vec(),
            action,
        }
    }

    pub fn of(entry: &UndoEntry) -> Result<StorageObject> {
        let space = entry.pk.as_slice().try_into().map_err(|_| {
            EngineError::Corrupt(format!("storage object of {} bytes", entry.pk.len()))
        })?;
        Ok(StorageObject {
            space: steady_storage::SpaceId::from_be_bytes(space),
            tree: (entry.index != 0).then_some(entry.index),
        })
    }
}

/// One write of a transaction, as logged for rollback and purge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoEntry {
    pub index: IndexId,
    pub pk: Vec<u8>,
    pub action: UndoAction,
}

const KIND_INSERTED: u8 = 1;
const KIND_REPLACED: u8 = 2;
const KIND_INDEX_ENTRY: u8 = 3;
const KIND_INSERTED_RANGE: u8 = 4;
/// An undo record holding several entries of one index (see [`UndoEntry::encode_packed`]).
const KIND_PACKED: u8 = 5;
/// A `Catalog` entry with a before-image (carried as `InsertedRange` carries its last key).
const KIND_CATALOG: u8 = 6;
/// A `Catalog` entry whose key held nothing before.
const KIND_CATALOG_ABSENT: u8 = 7;
const KIND_CREATED: u8 = 8;
const KIND_DROPPED: u8 = 9;
/// The most bytes a packed undo record holds: well under the inline limit of the smallest page
/// (about 1,000 bytes at 4 KiB), so it never goes to an overflow page.
pub const PACKED_UNDO_BYTES: usize = 480;
/// The sequence number of a transaction's commit marker.
pub const COMMIT_MARKER: u64 = u64::MAX;

pub fn undo_key(txn: TxnId, sequence: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(16);
    key.extend_from_slice(&txn.to_be_bytes());
    key.extend_from_slice(&sequence.to_be_bytes());
    key
}

/// The transaction and sequence number of an undo key.
pub fn split_undo_key(key: &[u8]) -> Result<(TxnId, u64)> {
    if key.len() != 16 {
        return Err(EngineError::Corrupt(format!(
            "undo key of {} bytes",
            key.len()
        )));
    }
    let txn = u64::from_be_bytes(key[..8].try_into().expect("8 bytes"));
    let sequence = u64::from_be_bytes(key[8..].try_into().expect("8 bytes"));
    Ok((txn, sequence))
}

impl UndoEntry {
    /// `kind u8 | index u64 | pk length u32 | pk | tail`, the tail being the previous start
    /// (u64), or the last key of an `InsertedRange` (length u32, key).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.body_len() + 8);
        self.encode_into(&mut out, true);
        out
    }

    fn encode_into(&self, out: &mut Vec<u8>, with_index: bool) {
        let (kind, start) = match &self.action {
            UndoAction::Inserted => (KIND_INSERTED, 0),
            UndoAction::Replaced { previous_start } => (KIND_REPLACED, *previous_start),
            UndoAction::IndexEntry => (KIND_INDEX_ENTRY, 0),
            UndoAction::InsertedRange { .. } => (KIND_INSERTED_RANGE, 0),
            UndoAction::Catalog { before: Some(_) } => (KIND_CATALOG, 0),
            UndoAction::Catalog { before: None } => (KIND_CATALOG_ABSENT, 0),
            UndoAction::Created => (KIND_CREATED, 0),
            UndoAction::Dropped => (KIND_DROPPED, 0),
        };
        out.push(kind);
        if with_index {
            out.extend_from_slice(&self.index.to_le_bytes());
        }
        out.extend_from_slice(&(self.pk.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.pk);
        match &self.action {
            UndoAction::InsertedRange { last: bytes }
            | UndoAction::Catalog {
                before: Some(bytes),
            } => {
                out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                out.extend_from_slice(bytes);
            }
            _ => out.extend_from_slice(&start.to_le_bytes()),
        }
    }

    /// Bytes of the encoding without the index.
    fn body_len(&self) -> usize {
        let tail = match &self.action {
            UndoAction::InsertedRange { last: bytes }
            | UndoAction::Catalog {
                before: Some(bytes),
            } => 4 + bytes.len(),
            _ => 8,
        };
        1 + 4 + self.pk.len() + tail
    }

    /// Bytes this entry takes in a packed record.
    pub fn packed_len(&self) -> usize {
        4 + self.body_len()
    }

    /// `entries` (at least one, all of one index) as one undo record: a lone entry as
    /// [`UndoEntry::encode`] writes it; several as `KIND_PACKED | index u64 | count u32` and then
    /// per entry its length (u32) and its encoding without the index. A statement that changes
    /// many rows of a table so writes one undo record per batch, not one per row.
    pub fn encode_packed(entries: &[UndoEntry]) -> Vec<u8> {
        let [first, rest @ ..] = entries else {
            return Vec::new();
        };
        if rest.is_empty() {
            return first.encode();
        }
        let mut out = Vec::with_capacity(13 + entries.iter().map(Self::packed_len).sum::<usize>());
        out.push(KIND_PACKED);
        out.extend_from_slice(&first.index.to_le_bytes());
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for entry in entries {
            debug_assert_eq!(entry.index, first.index, "a packed record is of one index");
            out.extend_from_slice(&(entry.body_len() as u32).to_le_bytes());
            entry.encode_into(&mut out, false);
        }
        out
    }

    /// The entries of one undo record, in the order they were written (one, or several packed).
    pub fn decode_record(bytes: &[u8]) -> Result<Vec<UndoEntry>> {
        if bytes.first() != Some(&KIND_PACKED) {
            return Ok(vec![UndoEntry::decode(bytes)?]);
        }
        let corrupt =
            || EngineError::Corrupt(format!("packed undo record of {} bytes", bytes.len()));
        let header = bytes.get(1..13).ok_or_else(corrupt)?;
        let index = &header[..8];
        let count = u32::from_le_bytes(header[8..].try_into().expect("4 bytes")) as usize;
        let mut entries = Vec::with_capacity(count);
        let mut rest = &bytes[13..];
        for _ in 0..count {
            let len = rest.get(..4).ok_or_else(corrupt)?;
            let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
            let body = rest
                .get(4..4 + len)
                .filter(|b| !b.is_empty())
                .ok_or_else(corrupt)?;
            let encoded = [&body[..1], index, &body[1..]].concat();
            entries.push(UndoEntry::decode(&encoded)?);
            rest = &rest[4 + len..];
        }
        if !rest.is_empty() || entries.is_empty() {
            return Err(corrupt());
        }
        Ok(entries)
    }

    pub fn decode(bytes: &[u8]) -> Result<UndoEntry> {
        let corrupt = || EngineError::Corrupt(format!("undo entry of {} bytes", bytes.len()));
        if bytes.len() < 13 {
            return Err(corrupt());
        }
        let index = u64::from_le_bytes(bytes[1..9].try_into().expect("8 bytes"));
        let pk_len = u32::from_le_bytes(bytes[9..13].try_into().expect("4 bytes")) as usize;
        let pk = bytes.get(13..13 + pk_len).ok_or_else(corrupt)?.to_vec();
        let tail = &bytes[13 + pk_len..];
        if matches!(bytes[0], KIND_INSERTED_RANGE | KIND_CATALOG) {
            let len = tail.get(..4).ok_or_else(corrupt)?;
            let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
            if tail.len() != 4 + len {
                return Err(corrupt());
            }
            let carried = tail[4..].to_vec();
            let action = match bytes[0] {
                KIND_INSERTED_RANGE => UndoAction::InsertedRange { last: carried },
                _ => UndoAction::Catalog {
                    before: Some(carried),
                },
            };
            return Ok(UndoEntry { index, pk, action });
        }
        if tail.len() != 8 {
            return Err(corrupt());
        }
        let start = u64::from_le_bytes(tail.try_into().expect("8 bytes"));
        let action = match bytes[0] {
            KIND_INSERTED => UndoAction::Inserted,
            KIND_REPLACED => UndoAction::Replaced {
                previous_start: start,
            },
            KIND_INDEX_ENTRY => UndoAction::IndexEntry,
            KIND_CATALOG_ABSENT => UndoAction::Catalog { before: None },
            KIND_CREATED => UndoAction::Created,
            KIND_DROPPED => UndoAction::Dropped,
            _ => return Err(corrupt()),
        };
        Ok(UndoEntry { index, pk, action })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_round_trip_and_history_orders_newest_first() {
        let version = Version {
            writer: 9,
            deleted: true,
            kept: false,
            row: Vec::new(),
        };
        assert_eq!(Version::decode(&version.encode()).unwrap(), version);
        let kept = Version {
            kept: true,
            row: b"row".to_vec(),
            ..version.clone()
        };
        let encoded = kept.encode();
        assert_eq!(Version::decode(&encoded).unwrap(), kept);
        assert_eq!(Version::from_record(encoded.clone()).unwrap(), kept);
        assert_eq!(Version::in_record(&encoded).unwrap(), (9, true));
        assert_eq!(Version::record_row(&encoded).unwrap(), b"row");
        assert_eq!(encoded.len(), Version::encode_live(9, b"row").len());
        assert_eq!(kept.kept_version().unwrap().writer, SETTLED_WRITER);
        assert!(Version::decode(&[KEPT, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
        assert_eq!(Version::from_record(version.encode()).unwrap(), version);
        let live = Version {
            deleted: false,
            row: b"row".to_vec(),
            ..version.clone()
        };
        assert_eq!(Version::encode_live(9, b"row"), live.encode());
        let restamped = Version::restamped_live(live.encode(), 0).unwrap().unwrap();
        assert_eq!(Version::decode(&restamped).unwrap().writer, 0);
        assert_eq!(Version::record_row(&restamped).unwrap(), b"row");
        let mark = Version {
            deleted: true,
            ..live.clone()
        };
        assert_eq!(Version::restamped_live(mark.encode(), 0).unwrap(), None);
        assert!(Version::from_record(vec![0; HEADER - 1]).is_err());
        let entry = UndoEntry {
            index: 3,
            pk: b"pk".to_vec(),
            action: UndoAction::Replaced { previous_start: 42 },
        };
        assert_eq!(UndoEntry::decode(&entry.encode()).unwrap(), entry);
        let range = UndoEntry {
            index: 3,
            pk: b"a".to_vec(),
            action: UndoAction::InsertedRange {
                last: b"zz".to_vec(),
            },
        };
        assert_eq!(UndoEntry::decode(&range.encode()).unwrap(), range);
        let encoded = range.encode();
        assert!((0..encoded.len()).all(|n| UndoEntry::decode(&encoded[..n]).is_err()));
        let packed = vec![
            entry.clone(),
            range.clone(),
            UndoEntry {
                index: entry.index,
                pk: b"z".to_vec(),
                action: UndoAction::Inserted,
            },
        ];
        let encoded = UndoEntry::encode_packed(&packed);
        assert_eq!(UndoEntry::decode_record(&encoded).unwrap(), packed);
        assert!((0..encoded.len()).all(|n| UndoEntry::decode_record(&encoded[..n]).is_err()));
        assert_eq!(
            UndoEntry::decode_record(&UndoEntry::encode_packed(&packed[..1])).unwrap(),
            packed[..1]
        );
        let old = OldVersion {
            version: version.clone(),
            superseded_by: 11,
        };
        assert_eq!(OldVersion::decode(&old.encode()).unwrap(), old);
        assert!(history_key(1, b"a", 10) < history_key(1, b"a", 5));
        assert!(history_key(1, b"a", 1).starts_with(&history_prefix(1, b"a")));
        assert!(!history_key(1, b"ab", 1).starts_with(&history_prefix(1, b"a")));
        assert_eq!(history_start(&history_key(1, b"a", 77)), 77);
        assert!(Version::decode(b"short").is_err());
    }

    #[test]
    fn catalog_undo_entries_round_trip() {
        let object = StorageObject {
            space: 7,
            tree: Some(42),
        };
        let entries = [
            UndoEntry {
                index: 1,
                pk: b"table/x".to_vec(),
                action: UndoAction::Catalog {
                    before: Some(b"{\"id\":1}".to_vec()),
                },
            },
            UndoEntry {
                index: 1,
                pk: b"seq/s".to_vec(),
                action: UndoAction::Catalog { before: None },
            },
            // A before-image of 4 bytes encodes to as many bytes as a start CSN would.
            UndoEntry {
                index: 1,
                pk: b"view/v".to_vec(),
                action: UndoAction::Catalog {
                    before: Some(b"abcd".to_vec()),
                },
            },
            object.entry(UndoAction::Created),
            StorageObject {
                tree: None,
                ..object
            }
            .entry(UndoAction::Dropped),
        ];
        for entry in &entries {
            let encoded = entry.encode();
            assert_eq!(&UndoEntry::decode(&encoded).unwrap(), entry);
            assert!((0..encoded.len()).all(|n| UndoEntry::decode(&encoded[..n]).is_err()));
            assert!(!entry.action.is_row_write());
        }
        assert_eq!(StorageObject::of(&entries[3]).unwrap(), object);
        assert_eq!(StorageObject::of(&entries[4]).unwrap().tree, None);
    }
}
