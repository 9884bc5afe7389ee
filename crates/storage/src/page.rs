//! The page format: a fixed header and a slotted record area.
//!
//! Every page of every space has the same 64-byte header (little endian):
//!
//! ```text
//! offset size field
//!  0     4    checksum    crc32c of bytes 4..page_size
//!  4     8    page LSN    LSN of the last change applied to this page
//! 12     2    page type   see PageType; 0 means never formatted
//! 14     2    level       B+tree level, 0 for leaves
//! 16     4    space id
//! 20     4    page number
//! 24     8    index id    the B+tree that owns the page (0 for space metadata)
//! 32     4    prev        left sibling, NO_PAGE if none
//! 36     4    next        right sibling (or next overflow page), NO_PAGE if none
//! 40     2    slot count
//! 42     2    reserved
//! 44     4    heap top    lowest offset used by record bytes (page_size when empty)
//! 48     4    garbage     bytes of dead records still inside the heap
//! 52    12    type-specific (the owner of the page type defines it; a leaf's first 8: its tag)
//! ```
//!
//! A leaf's **tag** (u64 at 52, 0 when none) is a summary its owner may set of the records the
//! leaf holds (the B+tree sets it to the largest of its entries' tags when every entry has one).
//! Any insert or replace of a record clears it, so a tag always describes records that were all
//! there when it was set; removing records keeps it.
//!
//! The slotted area: a slot array of u16 record offsets grows up from byte 64, records grow down from
//! the end of the page. Each record is stored as a u16 length followed by its bytes; the slot order is
//! the logical order (the B+tree keeps it sorted by key).
//!
//! ```text
//! | header | slot0 slot1 ... ->      free      <- ... rec1 rec0 |
//! 0        64                  ^free start  ^heap top         page_size
//! ```
//!
//! Invariants: `64 + 2 * slot_count <= heap_top <= page_size`; every slot points into
//! `heap_top..page_size`; `garbage` counts exactly the heap bytes no slot reaches, so compaction
//! recovers `garbage` bytes. A page whose checksum does not match is never interpreted.

use crate::{PageNo, SpaceId, StorageError};

/// Size of the common page header.
pub const HEADER_SIZE: usize = 64;
/// "No page" in sibling and child links.
pub const NO_PAGE: PageNo = u32::MAX;
/// Smallest and largest page sizes a database may be created with.
pub const MIN_PAGE_SIZE: usize = 4096;
pub const MAX_PAGE_SIZE: usize = 65536;
/// Default page size.
pub const DEFAULT_PAGE_SIZE: usize = 16384;
/// Offset of the type-specific header bytes (12 of them).
pub const TYPE_SPECIFIC: usize = 52;
/// Offset of a leaf's tag (a u64 in the type-specific bytes).
const LEAF_TAG: usize = TYPE_SPECIFIC;

const SLOT_SIZE: usize = 2;
const RECORD_LEN_SIZE: usize = 2;

/// What a page holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum PageType {
    /// All zeros: allocated in the file but never formatted.
    Unformatted = 0,
    SpaceHeader = 1,
    ExtentMap = 2,
    Leaf = 3,
    Branch = 4,
    Overflow = 5,
}

impl PageType {
    fn from_u16(value: u16) -> Option<Self> {
        Some(match value {
            0 => PageType::Unformatted,
            1 => PageType::SpaceHeader,
            2 => PageType::ExtentMap,
            3 => PageType::Leaf,
            4 => PageType::Branch,
            5 => PageType::Overflow,
            _ => return None,
        })
    }
}

/// Checks that `size` is a power of two between the minimum and maximum page size.
pub fn validate_page_size(size: usize) -> Result<(), StorageError> {
    if size.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&size) {
        Ok(())
    } else {
        Err(StorageError::Config(format!(
            "page size {size} must be a power of two from {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE}"
        )))
    }
}

pub fn read_u16(buf: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([buf[at], buf[at + 1]])
}
pub fn read_u32(buf: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes"))
}
pub fn read_u64(buf: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}
pub fn write_u16(buf: &mut [u8], at: usize, value: u16) {
    buf[at..at + 2].copy_from_slice(&value.to_le_bytes());
}
pub fn write_u32(buf: &mut [u8], at: usize, value: u32) {
    buf[at..at + 4].copy_from_slice(&value.to_le_bytes());
}
pub fn write_u64(buf: &mut [u8], at: usize, value: u64) {
    buf[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// The checksum stored in a page: crc32c of everything after the checksum field.
pub fn compute_checksum(page: &[u8]) -> u32 {
    crc32c::crc32c(&page[4..])
}

/// Stamps the checksum; called just before a page is written to its file.
pub fn stamp_checksum(page: &mut [u8]) {
    let sum = compute_checksum(page);
    write_u32(page, 0, sum);
}

/// Verifies a page read from `space`/`page_no`: checksum, and that the page says it is that page.
pub fn verify(page: &[u8], space: SpaceId, page_no: PageNo) -> Result<(), StorageError> {
    if page.iter().all(|&b| b == 0) {
        return Err(StorageError::corrupt(
            space,
            page_no,
            "page was never written (all zeros)",
        ));
    }
    let stored = read_u32(page, 0);
    let computed = compute_checksum(page);
    if stored != computed {
        return Err(StorageError::corrupt(
            space,
            page_no,
            format!("checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"),
        ));
    }
    let view = Page::new(page);
    if view.space_id() != space || view.page_no() != page_no {
        return Err(StorageError::corrupt(
            space,
            page_no,
            format!(
                "page claims to be page {} of space {}",
                view.page_no(),
                view.space_id()
            ),
        ));
    }
    if PageType::from_u16(read_u16(page, 12)).is_none() {
        return Err(StorageError::corrupt(space, page_no, "unknown page type"));
    }
    view.check_slots()
        .map_err(|reason| StorageError::corrupt(space, page_no, reason))
}

/// The record area is full: the caller must split or move records elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageFull;

/// A read-only view of one page.
#[derive(Clone, Copy)]
pub struct Page<'a> {
    buf: &'a [u8],
}

impl<'a> Page<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Page { buf }
    }
    pub fn bytes(&self) -> &'a [u8] {
        self.buf
    }
    pub fn size(&self) -> usize {
        self.buf.len()
    }
    pub fn lsn(&self) -> u64 {
        read_u64(self.buf, 4)
    }
    /// The page type; an unknown value reads as `Unformatted` (verify() rejects it on read).
    pub fn page_type(&self) -> PageType {
        PageType::from_u16(read_u16(self.buf, 12)).unwrap_or(PageType::Unformatted)
    }
    pub fn level(&self) -> u16 {
        read_u16(self.buf, 14)
    }
    pub fn space_id(&self) -> SpaceId {
        read_u32(self.buf, 16)
    }
    pub fn page_no(&self) -> PageNo {
        read_u32(self.buf, 20)
    }
    pub fn index_id(&self) -> u64 {
        read_u64(self.buf, 24)
    }
    pub fn prev(&self) -> PageNo {
        read_u32(self.buf, 32)
    }
    pub fn next(&self) -> PageNo {
        read_u32(self.buf, 36)
    }
    pub fn slot_count(&self) -> usize {
        read_u16(self.buf, 40) as usize
    }
    /// A leaf's tag (0: none); see the module doc.
    pub fn leaf_tag(&self) -> u64 {
        match self.page_type() {
            PageType::Leaf => read_u64(self.buf, LEAF_TAG),
            _ => 0,
        }
    }
    fn heap_top(&self) -> usize {
        read_u32(self.buf, 44) as usize
    }
    fn garbage(&self) -> usize {
        read_u32(self.buf, 48) as usize
    }
    fn free_start(&self) -> usize {
        HEADER_SIZE + SLOT_SIZE * self.slot_count()
    }
    #[inline]
    fn slot_offset(&self, index: usize) -> usize {
        read_u16(self.buf, HEADER_SIZE + SLOT_SIZE * index) as usize
    }

    /// The bytes of record `index` (in slot order).
    #[inline]
    pub fn record(&self, index: usize) -> &'a [u8] {
        let at = self.slot_offset(index);
        let len = read_u16(self.buf, at) as usize;
        &self.buf[at + RECORD_LEN_SIZE..at + RECORD_LEN_SIZE + len]
    }

    /// Iterates over the records in slot order.
    pub fn records(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        (0..self.slot_count()).map(move |i| self.record(i))
    }

    /// Bytes available for new records (slot included) after compaction.
    pub fn free_space(&self) -> usize {
        self.heap_top() - self.free_start() + self.garbage()
    }

    /// Bytes a record of `len` bytes occupies, slot included.
    pub fn record_footprint(len: usize) -> usize {
        SLOT_SIZE + RECORD_LEN_SIZE + len
    }

    /// Bytes all records occupy, slots included: by the invariants, the usable space less the free
    /// space, read from the header without visiting the records.
    pub fn used_space(&self) -> usize {
        Self::usable_space(self.size()).saturating_sub(self.free_space())
    }

    /// Bytes available for records in an empty page of this size.
    pub fn usable_space(page_size: usize) -> usize {
        page_size - HEADER_SIZE
    }

    /// Whether the heap header is in bounds (`64 + 2 * slot_count <= heap_top <= page_size`, garbage
    /// within the heap): what record operations need of a page whose slots are consistent.
    fn heap_in_bounds(&self) -> bool {
        let (size, top) = (self.size(), self.heap_top());
        self.free_start() <= top && top <= size && self.garbage() <= size - top
    }

    /// Structural check of the slot array and heap, independent of record contents.
    pub fn check_slots(&self) -> Result<(), String> {
        let size = self.size();
        let (top, free_start) = (self.heap_top(), self.free_start());
        if top > size || free_start > top {
            return Err(format!(
                "heap top {top} outside {free_start}..={size} ({} slots)",
                self.slot_count()
            ));
        }
        let mut live = 0;
        for i in 0..self.slot_count() {
            let at = self.slot_offset(i);
            if at < top || at + RECORD_LEN_SIZE > size {
                return Err(format!(
                    "slot {i} points to {at}, outside the heap {top}..{size}"
                ));
            }
            let end = at + RECORD_LEN_SIZE + read_u16(self.buf, at) as usize;
            if end > size {
                return Err(format!("record {i} at {at} runs past the end of the page"));
            }
            live += end - at;
        }
        if live + self.garbage() != size - top {
            return Err(format!(
                "heap accounting: {live} live + {} garbage != {} heap bytes",
                self.garbage(),
                size - top
            ));
        }
        Ok(())
    }
}

/// A page being changed. A `PageMut` made by [`PageMut::logged`] appends each operation it makes
/// to a [`PageOps`], which the redo log carries and recovery replays on the page as it was
/// (physiological redo, as InnoDB and PostgreSQL log "insert this record at this slot"): logging a
/// row costs the row and a few bytes, never a comparison of the page with a copy of itself.
/// The checksum and LSN fields are not changed by operations.
pub struct PageMut<'a> {
    buf: &'a mut [u8],
    ops: Option<&'a mut PageOps>,
}

/// The operations made on one page through a logged [`PageMut`], encoded for redo:
///
/// ```text
/// op := 1 insert  | slot u16 | len u16 | record bytes
///     | 2 remove  | slot u16
///     | 3 replace | slot u16 | len u16 | record bytes
///     | 4 write   | offset u16 | len u16 | bytes        (header fields: prev, next, level, type)
///     | 5 format  | type u16 | level u16 | space u32 | page u32 | index u64
///     | 6 compact
///     | 7 clear records
///     | 8 truncate | slot u16                           (removes records slot..)
///     | 9 insert next     | shared u8 | suffix len u8 | suffix bytes
///     | 10 insert prefixed | slot u16 | shared u8 | suffix len u16 | suffix bytes
///     | 11 replace delta   | slot u16 | prefix u16 | suffix u16 | middle len u16 | middle bytes
/// ```
///
/// Ops 9 and 10 are inserts whose record begins with `shared` bytes of the record left of it on
/// the page (at `slot - 1`), which only the rest follows: sorted records share long prefixes (an
/// index entry's key, the transaction id of an undo key), so a run of inserts or a page image
/// costs a few bytes a record. Op 9 inserts right after the record the previous insert op of the
/// same list put in (a run of appends), so it names no slot. Op 11 replaces a record with one that
/// keeps `prefix` bytes of its start and `suffix` bytes of its end, logging only the middle: a row
/// version that changes one column and its writer costs those bytes, not the row.
///
/// Replaying the operations, in order, on the page as it was before them gives the page as it is:
/// every operation is a function of the page's bytes and its arguments. `raw` is set when a caller
/// took the page's bytes to lay them out itself, which no operation describes: the page is then
/// logged whole.
#[derive(Debug, Default)]
pub struct PageOps {
    pub(crate) bytes: Vec<u8>,
    pub(crate) raw: bool,
    /// The slot the last operation inserted at, if the last operation was an insert (op 9's
    /// implicit slot is the next one).
    last_insert: Option<usize>,
}

const OP_INSERT: u8 = 1;
const OP_REMOVE: u8 = 2;
const OP_REPLACE: u8 = 3;
const OP_WRITE: u8 = 4;
const OP_FORMAT: u8 = 5;
const OP_COMPACT: u8 = 6;
const OP_CLEAR: u8 = 7;
const OP_TRUNCATE: u8 = 8;
const OP_INSERT_NEXT: u8 = 9;
const OP_INSERT_PREFIXED: u8 = 10;
const OP_REPLACE_DELTA: u8 = 11;
/// Bytes kept from a replaced record below which op 11 is not worth its longer header.
const MIN_KEPT: usize = 8;
/// A shared prefix shorter than this is not worth an op 9 or 10.
const MIN_SHARED: usize = 3;

/// A redo record's page operations do not fit the page they name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadPageOps;

impl PageOps {
    fn op(&mut self, op: u8, slot: usize) {
        self.last_insert = None;
        self.bytes.push(op);
        self.bytes.extend_from_slice(&(slot as u16).to_le_bytes());
    }

    fn with_bytes(&mut self, op: u8, at: usize, bytes: &[u8]) {
        self.op(op, at);
        self.bytes
            .extend_from_slice(&(bytes.len() as u16).to_le_bytes());
        self.bytes.extend_from_slice(bytes);
    }

    /// Logs the insert of `record` at `slot`, where `left` is the record left of it on the page
    /// (if any): as its suffix after the prefix it shares with `left` when that is long enough
    /// (ops 9 and 10), else whole (op 1).
    fn insert(&mut self, slot: usize, record: &[u8], left: Option<&[u8]>) {
        let shared = left.map_or(0, |left| shared_prefix(left, record)).min(255);
        let suffix = &record[shared..];
        if shared < MIN_SHARED {
            self.with_bytes(OP_INSERT, slot, record);
        } else if self.last_insert == Some(slot - 1) && suffix.len() <= 255 {
            self.bytes
                .extend_from_slice(&[OP_INSERT_NEXT, shared as u8, suffix.len() as u8]);
            self.bytes.extend_from_slice(suffix);
        } else {
            self.op(OP_INSERT_PREFIXED, slot);
            self.bytes.push(shared as u8);
            self.bytes
                .extend_from_slice(&(suffix.len() as u16).to_le_bytes());
            self.bytes.extend_from_slice(suffix);
        }
        self.last_insert = Some(slot);
    }

    /// Logs the replacement at `slot` by `record` of a record that shared `kept` (prefix, suffix)
    /// bytes with it (see [`kept_ends`]): as the bytes between them when that is worth it (op
    /// 11), else whole (op 3).
    fn replace(&mut self, slot: usize, record: &[u8], (prefix, suffix): (usize, usize)) {
        if prefix + suffix < MIN_KEPT {
            self.with_bytes(OP_REPLACE, slot, record);
            return;
        }
        let middle = &record[prefix..record.len() - suffix];
        self.op(OP_REPLACE_DELTA, slot);
        for n in [prefix, suffix, middle.len()] {
            self.bytes.extend_from_slice(&(n as u16).to_le_bytes());
        }
        self.bytes.extend_from_slice(middle);
    }

    /// The operations that rebuild `page`, a slotted page whose meaning lies in its header fields
    /// and its records in slot order (a B+tree leaf or branch), from any bytes at all: format it,
    /// set its links and type-specific bytes, insert its records, each after the prefix it shares
    /// with the one before. Replayed on a zeroed page, they give a page with the same header
    /// fields and records (its heap compacted); far smaller than the page itself.
    pub fn image_of(page: &[u8]) -> PageOps {
        let view = Page::new(page);
        let mut ops = PageOps::default();
        ops.format(
            view.page_type(),
            view.space_id(),
            view.page_no(),
            view.index_id(),
            view.level(),
        );
        for at in [32, 36] {
            if read_u32(page, at) != NO_PAGE {
                ops.with_bytes(OP_WRITE, at, &page[at..at + 4]);
            }
        }
        if page[TYPE_SPECIFIC..HEADER_SIZE].iter().any(|&b| b != 0) {
            ops.with_bytes(OP_WRITE, TYPE_SPECIFIC, &page[TYPE_SPECIFIC..HEADER_SIZE]);
        }
        let mut left = None;
        for (slot, record) in view.records().enumerate() {
            ops.insert(slot, record, left);
            left = Some(record);
        }
        ops
    }

    fn format(
        &mut self,
        page_type: PageType,
        space: SpaceId,
        page_no: PageNo,
        index: u64,
        level: u16,
    ) {
        self.last_insert = None;
        self.bytes.push(OP_FORMAT);
        self.bytes
            .extend_from_slice(&(page_type as u16).to_le_bytes());
        self.bytes.extend_from_slice(&level.to_le_bytes());
        self.bytes.extend_from_slice(&space.to_le_bytes());
        self.bytes.extend_from_slice(&page_no.to_le_bytes());
        self.bytes.extend_from_slice(&index.to_le_bytes());
    }

    /// Replays encoded operations on `page`, a page whose records are consistent (read from its
    /// file, which checks them, or kept in the pool) or one not yet formatted. Operations that do
    /// not fit the page — a damaged log — fail with [`BadPageOps`], never a panic: a record
    /// operation needs a formatted page (its heap header in bounds) and a header write may not
    /// touch the fields that describe the records (slot count, heap top, garbage), which only
    /// record operations change.
    pub fn replay(mut ops: &[u8], page: &mut [u8]) -> Result<(), BadPageOps> {
        let mut last_insert = None;
        let mut formatted = Page::new(page).heap_in_bounds();
        while let Some((&op, rest)) = ops.split_first() {
            ops = rest;
            match op {
                OP_FORMAT | OP_CLEAR => formatted = true,
                OP_WRITE => {}
                _ if !formatted => return Err(BadPageOps),
                _ => {}
            }
            last_insert = replay_one(op, &mut ops, page, last_insert).ok_or(BadPageOps)?;
        }
        Ok(())
    }
}

/// The bytes a replacement `record` keeps of `old`: a shared prefix, and a shared suffix in
/// what is left of the shorter one.
fn kept_ends(old: &[u8], record: &[u8]) -> (usize, usize) {
    let prefix = shared_prefix(old, record);
    let room = old.len().min(record.len()) - prefix;
    let suffix = shared_suffix(&old[old.len() - room..], &record[record.len() - room..]);
    (prefix, suffix)
}

/// How many trailing bytes `a` and `b` share.
fn shared_suffix(a: &[u8], b: &[u8]) -> usize {
    a.iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// How many leading bytes `a` and `b` share.
fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    let len = a.len().min(b.len());
    let mut at = 0;
    while at + 8 <= len {
        let word = |s: &[u8]| u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
        let differ = word(a) ^ word(b);
        if differ != 0 {
            return at + differ.trailing_zeros() as usize / 8;
        }
        at += 8;
    }
    at + a[at..len]
        .iter()
        .zip(&b[at..len])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Takes `len` bytes off the front of `ops`.
fn take<'o>(ops: &mut &'o [u8], len: usize) -> Option<&'o [u8]> {
    if ops.len() < len {
        return None;
    }
    let (head, rest) = ops.split_at(len);
    *ops = rest;
    Some(head)
}

fn take_u16(ops: &mut &[u8]) -> Option<usize> {
    Some(read_u16(take(ops, 2)?, 0) as usize)
}

/// Replays one operation; returns the slot it inserted at, if it was an insert (op 9's
/// `last_insert`).
fn replay_one(
    op: u8,
    ops: &mut &[u8],
    page: &mut [u8],
    last_insert: Option<usize>,
) -> Option<Option<usize>> {
    let count = Page::new(page).slot_count();
    match op {
        OP_INSERT => {
            let at = take_u16(ops)?;
            let len = take_u16(ops)?;
            let bytes = take(ops, len)?;
            (at <= count).then_some(())?;
            insert_record(page, at, bytes).ok()?;
            Some(Some(at))
        }
        OP_INSERT_NEXT | OP_INSERT_PREFIXED => {
            let at = match op {
                OP_INSERT_NEXT => last_insert? + 1,
                _ => take_u16(ops)?,
            };
            let shared = usize::from(take(ops, 1)?[0]);
            let len = match op {
                OP_INSERT_NEXT => usize::from(take(ops, 1)?[0]),
                _ => take_u16(ops)?,
            };
            let suffix = take(ops, len)?;
            if at == 0 || at > count {
                return None;
            }
            let left = Page::new(page).record(at - 1);
            let mut record = left.get(..shared)?.to_vec();
            record.extend_from_slice(suffix);
            insert_record(page, at, &record).ok()?;
            Some(Some(at))
        }
        OP_REPLACE_DELTA => {
            let at = take_u16(ops)?;
            let (prefix, suffix, len) = (take_u16(ops)?, take_u16(ops)?, take_u16(ops)?);
            let middle = take(ops, len)?;
            if at >= count {
                return None;
            }
            let old = Page::new(page).record(at);
            let tail = old.len().checked_sub(suffix)?;
            if prefix > tail {
                return None;
            }
            let mut record = old[..prefix].to_vec();
            record.extend_from_slice(middle);
            record.extend_from_slice(&old[tail..]);
            replace_record(page, at, &record).ok()?;
            Some(None)
        }
        _ => replay_other(op, ops, page, count).map(|()| None),
    }
}

/// Whether bytes `at..at + len` lie in the header fields a header write may set: past the
/// checksum and LSN, before the body, and clear of the fields that describe the records.
fn header_field(at: usize, len: usize) -> bool {
    let end = at + len;
    at >= 12 && end <= HEADER_SIZE && (end <= 40 || at >= TYPE_SPECIFIC)
}

/// Replays an operation other than an insert.
fn replay_other(op: u8, ops: &mut &[u8], page: &mut [u8], count: usize) -> Option<()> {
    match op {
        OP_REPLACE | OP_WRITE => {
            let at = take_u16(ops)?;
            let len = take_u16(ops)?;
            let bytes = take(ops, len)?;
            match op {
                OP_REPLACE if at < count => replace_record(page, at, bytes).ok(),
                OP_WRITE if header_field(at, len) => {
                    page[at..at + len].copy_from_slice(bytes);
                    Some(())
                }
                _ => None,
            }
        }
        OP_REMOVE | OP_TRUNCATE => {
            let slot = take_u16(ops)?;
            match op {
                OP_REMOVE if slot < count => remove_record(page, slot),
                OP_TRUNCATE if slot <= count => truncate_records(page, slot),
                _ => return None,
            }
            Some(())
        }
        OP_FORMAT => {
            let f = take(ops, 20)?;
            let page_type = PageType::from_u16(read_u16(f, 0))?;
            let (space, page_no) = (read_u32(f, 4), read_u32(f, 8));
            format_page(
                page,
                page_type,
                space,
                page_no,
                read_u64(f, 12),
                read_u16(f, 2),
            );
            Some(())
        }
        OP_COMPACT => {
            compact_records(page);
            Some(())
        }
        OP_CLEAR => {
            clear_records(page);
            Some(())
        }
        _ => None,
    }
}

impl<'a> PageMut<'a> {
    /// A page changed without logging what changed.
    pub fn new(buf: &'a mut [u8]) -> Self {
        PageMut { buf, ops: None }
    }

    /// A page whose operations are appended to `ops`.
    pub fn logged(buf: &'a mut [u8], ops: &'a mut PageOps) -> Self {
        PageMut {
            buf,
            ops: Some(ops),
        }
    }

    /// Logs an operation other than an insert (which ends a run of op 9s).
    fn log(&mut self, entry: impl FnOnce(&mut PageOps)) {
        if let Some(ops) = self.ops.as_deref_mut() {
            ops.last_insert = None;
            entry(ops);
        }
    }

    pub fn view(&self) -> Page<'_> {
        Page::new(self.buf)
    }

    /// Formats the page as an empty page of `page_type`.
    pub fn format(
        &mut self,
        page_type: PageType,
        space: SpaceId,
        page_no: PageNo,
        index_id: u64,
        level: u16,
    ) {
        format_page(self.buf, page_type, space, page_no, index_id, level);
        self.log(|ops| ops.format(page_type, space, page_no, index_id, level));
    }

    pub fn set_lsn(&mut self, lsn: u64) {
        write_u64(self.buf, 4, lsn);
    }
    pub fn set_level(&mut self, level: u16) {
        self.write(14, &level.to_le_bytes());
    }
    pub fn set_page_type(&mut self, page_type: PageType) {
        self.write(12, &(page_type as u16).to_le_bytes());
    }
    pub fn set_prev(&mut self, page: PageNo) {
        self.write(32, &page.to_le_bytes());
    }
    pub fn set_next(&mut self, page: PageNo) {
        self.write(36, &page.to_le_bytes());
    }

    /// Copies `bytes` into the page header at `at`.
    fn write(&mut self, at: usize, bytes: &[u8]) {
        self.buf[at..at + bytes.len()].copy_from_slice(bytes);
        self.log(|ops| ops.with_bytes(OP_WRITE, at, bytes));
    }

    /// Sets a leaf's tag (see the module doc).
    pub fn set_leaf_tag(&mut self, tag: u64) {
        debug_assert_eq!(self.view().page_type(), PageType::Leaf);
        self.write(LEAF_TAG, &tag.to_le_bytes());
    }

    /// Clears a leaf's tag before one of its records is inserted or replaced.
    fn clear_leaf_tag(&mut self) {
        if self.view().leaf_tag() != 0 {
            self.set_leaf_tag(0);
        }
    }

    /// The bytes after the fixed header fields that the page type's owner defines.
    pub fn type_specific_mut(&mut self) -> &mut [u8] {
        self.log(|ops| ops.raw = true);
        &mut self.buf[TYPE_SPECIFIC..HEADER_SIZE]
    }

    /// The whole raw page, for owners that lay out their own body (space metadata, overflow).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.log(|ops| ops.raw = true);
        self.buf
    }

    /// Inserts `record` so that it becomes record `index`, compacting the heap if needed.
    pub fn insert(&mut self, index: usize, record: &[u8]) -> Result<(), PageFull> {
        insert_record(self.buf, index, record)?;
        if let Some(ops) = self.ops.as_deref_mut() {
            let left = index.checked_sub(1).map(|i| Page::new(self.buf).record(i));
            ops.insert(index, record, left);
        }
        self.clear_leaf_tag();
        Ok(())
    }

    /// Makes this page a copy of `image` (a slotted page, see [`PageOps::image_of`]), logged as
    /// the operations that rebuild it rather than as its bytes.
    pub fn copy_image(&mut self, image: &[u8]) {
        self.buf.copy_from_slice(image);
        if let Some(ops) = self.ops.as_deref_mut() {
            let rebuild = PageOps::image_of(image);
            ops.bytes.extend_from_slice(&rebuild.bytes);
            ops.last_insert = rebuild.last_insert;
        }
    }

    /// Removes record `index`; its bytes become garbage until the next compaction.
    pub fn remove(&mut self, index: usize) {
        remove_record(self.buf, index);
        self.log(|ops| ops.op(OP_REMOVE, index));
    }

    /// Replaces record `index` with `record`; on `PageFull` the page is unchanged.
    pub fn replace(&mut self, index: usize, record: &[u8]) -> Result<(), PageFull> {
        match self.ops.as_deref_mut() {
            None => replace_record(self.buf, index, record)?,
            Some(ops) => {
                let kept = kept_ends(Page::new(self.buf).record(index), record);
                replace_record(self.buf, index, record)?;
                ops.replace(index, record, kept);
            }
        }
        self.clear_leaf_tag();
        Ok(())
    }

    /// Removes records `from..`.
    pub fn truncate(&mut self, from: usize) {
        truncate_records(self.buf, from);
        self.log(|ops| ops.op(OP_TRUNCATE, from));
    }

    /// Removes every record.
    pub fn clear_records(&mut self) {
        clear_records(self.buf);
        self.log(|ops| ops.bytes.push(OP_CLEAR));
    }

    /// Rewrites the heap so that all free space is contiguous.
    pub fn compact(&mut self) {
        compact_records(self.buf);
        self.log(|ops| ops.bytes.push(OP_COMPACT));
    }
}

// The operations themselves, on the page's bytes: what `PageMut` does and what redo replays.

fn format_page(
    buf: &mut [u8],
    page_type: PageType,
    space: SpaceId,
    page_no: PageNo,
    index_id: u64,
    level: u16,
) {
    buf.fill(0);
    write_u16(buf, 12, page_type as u16);
    write_u16(buf, 14, level);
    write_u32(buf, 16, space);
    write_u32(buf, 20, page_no);
    write_u64(buf, 24, index_id);
    write_u32(buf, 32, NO_PAGE);
    write_u32(buf, 36, NO_PAGE);
    let size = buf.len() as u32;
    write_u32(buf, 44, size);
}

fn set_slot_count(buf: &mut [u8], count: usize) {
    write_u16(buf, 40, count as u16);
}
fn set_heap_top(buf: &mut [u8], top: usize) {
    write_u32(buf, 44, top as u32);
}
fn set_garbage(buf: &mut [u8], bytes: usize) {
    write_u32(buf, 48, bytes as u32);
}
fn set_slot_offset(buf: &mut [u8], index: usize, offset: usize) {
    write_u16(buf, HEADER_SIZE + SLOT_SIZE * index, offset as u16);
}

fn insert_record(buf: &mut [u8], index: usize, record: &[u8]) -> Result<(), PageFull> {
    let count = Page::new(buf).slot_count();
    assert!(index <= count, "insert at {index} past {count} records");
    let need = Page::record_footprint(record.len());
    if Page::new(buf).free_space() < need {
        return Err(PageFull);
    }
    if Page::new(buf).heap_top() - Page::new(buf).free_start() < need {
        compact_records(buf);
    }
    let at = Page::new(buf).heap_top() - RECORD_LEN_SIZE - record.len();
    write_record(buf, at, record);
    set_heap_top(buf, at);
    let slots = HEADER_SIZE + SLOT_SIZE * index;
    let slots_end = HEADER_SIZE + SLOT_SIZE * count;
    buf.copy_within(slots..slots_end, slots + SLOT_SIZE);
    set_slot_offset(buf, index, at);
    set_slot_count(buf, count + 1);
    Ok(())
}

fn remove_record(buf: &mut [u8], index: usize) {
    let count = Page::new(buf).slot_count();
    assert!(index < count, "remove of {index} past {count} records");
    let len = Page::new(buf).record(index).len();
    let garbage = Page::new(buf).garbage() + RECORD_LEN_SIZE + len;
    set_garbage(buf, garbage);
    let slots = HEADER_SIZE + SLOT_SIZE * (index + 1);
    let slots_end = HEADER_SIZE + SLOT_SIZE * count;
    buf.copy_within(slots..slots_end, slots - SLOT_SIZE);
    set_slot_count(buf, count - 1);
}

fn replace_record(buf: &mut [u8], index: usize, record: &[u8]) -> Result<(), PageFull> {
    let old_len = Page::new(buf).record(index).len();
    if record.len() <= old_len {
        let at = Page::new(buf).slot_offset(index);
        write_record(buf, at, record);
        let garbage = Page::new(buf).garbage() + old_len - record.len();
        set_garbage(buf, garbage);
        return Ok(());
    }
    if Page::new(buf).free_space() + RECORD_LEN_SIZE + old_len < RECORD_LEN_SIZE + record.len() {
        return Err(PageFull);
    }
    remove_record(buf, index);
    insert_record(buf, index, record).expect("space was checked before removing the old record");
    Ok(())
}

/// Writes a record (its length, then its bytes) at heap offset `at`.
fn write_record(buf: &mut [u8], at: usize, record: &[u8]) {
    write_u16(buf, at, record.len() as u16);
    buf[at + RECORD_LEN_SIZE..at + RECORD_LEN_SIZE + record.len()].copy_from_slice(record);
}

fn truncate_records(buf: &mut [u8], from: usize) {
    let count = Page::new(buf).slot_count();
    for index in (from..count).rev() {
        remove_record(buf, index);
    }
}

fn clear_records(buf: &mut [u8]) {
    let size = buf.len();
    set_slot_count(buf, 0);
    set_heap_top(buf, size);
    set_garbage(buf, 0);
}

/// Moves the records together at the end of the page, in slot order, leaving the slots where
/// they are: one copy of the page, no allocation per record (a page near full whose records grow
/// in place compacts often).
fn compact_records(buf: &mut [u8]) {
    let old = buf.to_vec();
    let old = Page::new(&old);
    let mut top = buf.len();
    for index in 0..old.slot_count() {
        let record = old.record(index);
        top -= RECORD_LEN_SIZE + record.len();
        write_record(buf, top, record);
        set_slot_offset(buf, index, top);
    }
    set_heap_top(buf, top);
    set_garbage(buf, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty_page(size: usize) -> Vec<u8> {
        let mut buf = vec![0u8; size];
        PageMut::new(&mut buf).format(PageType::Leaf, 1, 2, 3, 0);
        buf
    }

    #[test]
    fn records_keep_slot_order_and_survive_compaction() {
        let mut buf = empty_page(4096);
        let mut page = PageMut::new(&mut buf);
        page.insert(0, b"bbb").unwrap();
        page.insert(0, b"a").unwrap();
        page.insert(2, b"cccc").unwrap();
        page.remove(1);
        page.replace(0, b"aaaaaaaa").unwrap();
        page.compact();
        let records: Vec<&[u8]> = page.view().records().collect();
        assert_eq!(records, vec![&b"aaaaaaaa"[..], &b"cccc"[..]]);
        page.view().check_slots().unwrap();
    }

    /// `used_space` reads the header; it must equal the footprints of the records, with dead
    /// records in the heap before and after compaction.
    #[test]
    fn used_space_is_the_footprint_of_the_records() {
        let mut buf = empty_page(4096);
        let mut page = PageMut::new(&mut buf);
        let footprints = |page: &PageMut<'_>| -> usize {
            let view = page.view();
            view.records()
                .map(|r| Page::record_footprint(r.len()))
                .sum()
        };
        assert_eq!(page.view().used_space(), 0);
        for (i, len) in [10, 300, 7, 0, 1200, 55].into_iter().enumerate() {
            page.insert(i, &vec![i as u8; len]).unwrap();
            assert_eq!(page.view().used_space(), footprints(&page));
        }
        page.remove(1);
        page.replace(2, &[9u8; 40]).unwrap();
        assert_eq!(page.view().used_space(), footprints(&page));
        page.compact();
        assert_eq!(page.view().used_space(), footprints(&page));
    }

    #[test]
    fn full_page_refuses_and_stays_intact() {
        let mut buf = empty_page(4096);
        let mut page = PageMut::new(&mut buf);
        let record = [7u8; 1000];
        let mut inserted = 0;
        while page.insert(inserted, &record).is_ok() {
            inserted += 1;
        }
        assert_eq!(inserted, 4);
        assert_eq!(page.insert(0, &record), Err(PageFull));
        assert_eq!(page.view().slot_count(), 4);
        page.remove(0);
        page.insert(3, &record).unwrap();
        page.view().check_slots().unwrap();
    }

    #[test]
    fn checksum_catches_a_flipped_byte() {
        let mut buf = empty_page(4096);
        PageMut::new(&mut buf).insert(0, b"hello").unwrap();
        stamp_checksum(&mut buf);
        verify(&buf, 1, 2).unwrap();
        buf[4000] ^= 0x40;
        let err = verify(&buf, 1, 2).unwrap_err().to_string();
        assert!(err.contains("page 2 of space 1"), "{err}");
        assert!(verify(&vec![0u8; 4096], 1, 2).is_err());
    }

    /// A record of a sorted run: a shared head, then `n` big endian (neighbours share prefixes).
    fn sorted_record(n: u32, tail: usize) -> Vec<u8> {
        let mut record = b"key-of-index-7:".to_vec();
        record.extend_from_slice(&n.to_be_bytes());
        record.extend(std::iter::repeat_n(n as u8, tail));
        record
    }

    /// Whatever the operations, replaying their log on the page as it was gives the page as it
    /// is, byte for byte: inserts compressed against their left neighbour (ops 9 and 10) included.
    #[test]
    fn replaying_logged_operations_gives_the_same_page() {
        use proptest::prelude::*;
        #[derive(Debug, Clone)]
        enum Op {
            Insert(u32, usize),
            Append(u32, usize),
            Remove(usize),
            Replace(usize, u32),
            Touch(usize, u8),
            Compact,
            Next(u32),
            Tag(u64),
        }
        let op = prop_oneof![
            (0u32..5000, 0usize..40).prop_map(|(n, t)| Op::Insert(n, t)),
            (0u32..5000, 0usize..300).prop_map(|(n, t)| Op::Append(n, t)),
            any::<usize>().prop_map(Op::Remove),
            (any::<usize>(), 0u32..5000).prop_map(|(at, n)| Op::Replace(at, n)),
            (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Op::Touch(at, b)),
            Just(Op::Compact),
            any::<u32>().prop_map(Op::Next),
            any::<u64>().prop_map(Op::Tag),
        ];
        proptest!(ProptestConfig::with_cases(300), |(ops in proptest::collection::vec(op, 0..120))| {
            let before = empty_page(4096);
            let mut after = before.clone();
            let mut log = PageOps::default();
            let mut page = PageMut::logged(&mut after, &mut log);
            for op in ops {
                let count = page.view().slot_count();
                match op {
                    Op::Insert(n, tail) => {
                        let _ = page.insert(n as usize % (count + 1), &sorted_record(n, tail));
                    }
                    Op::Append(n, tail) => {
                        let _ = page.insert(count, &sorted_record(n, tail));
                    }
                    Op::Remove(at) if count > 0 => page.remove(at % count),
                    Op::Replace(at, n) if count > 0 => {
                        let _ = page.replace(at % count, &sorted_record(n, 3));
                    }
                    Op::Touch(at, byte) if count > 0 => {
                        let mut record = page.view().record(at % count).to_vec();
                        if !record.is_empty() {
                            let middle = record.len() / 2;
                            record[middle] = byte;
                            record.insert(middle, byte);
                        }
                        let _ = page.replace(at % count, &record);
                    }
                    Op::Compact => page.compact(),
                    Op::Next(next) => page.set_next(next),
                    Op::Tag(tag) => page.set_leaf_tag(tag),
                    _ => {}
                }
            }
            let mut replayed = before.clone();
            PageOps::replay(&log.bytes, &mut replayed).unwrap();
            prop_assert_eq!(&replayed[12..], &after[12..]);
        });
    }

    /// A leaf's tag survives removals and is cleared by any insert or replace, logged.
    #[test]
    fn a_leaf_tag_is_cleared_by_inserts_and_replaces_only() {
        let mut bytes = empty_page(4096);
        let mut log = PageOps::default();
        let before = bytes.clone();
        let mut page = PageMut::logged(&mut bytes, &mut log);
        for n in 0..4 {
            page.insert(n, &sorted_record(n as u32, 2)).unwrap();
        }
        page.set_leaf_tag(7);
        page.remove(1);
        assert_eq!(page.view().leaf_tag(), 7);
        page.replace(0, &sorted_record(0, 3)).unwrap();
        assert_eq!(page.view().leaf_tag(), 0);
        page.set_leaf_tag(9);
        page.insert(3, &sorted_record(9, 1)).unwrap();
        assert_eq!(page.view().leaf_tag(), 0);
        page.set_leaf_tag(11);
        let mut replayed = before;
        PageOps::replay(&log.bytes, &mut replayed).unwrap();
        assert_eq!(Page::new(&replayed).leaf_tag(), 11);
        assert_eq!(replayed[12..], bytes[12..]);
    }

    /// A page's image as operations rebuilds, from any bytes, a page with the same header fields
    /// and records; sorted records cost a few bytes each.
    #[test]
    fn an_image_as_operations_rebuilds_the_page_from_garbage() {
        let mut page_bytes = empty_page(16384);
        let mut page = PageMut::new(&mut page_bytes);
        page.set_prev(41);
        page.set_next(43);
        page.type_specific_mut()[3] = 9;
        let mut n = 0;
        while page.insert(n as usize, &sorted_record(n * 10, 0)).is_ok() {
            n += 1;
        }
        page.remove(5);
        let image = PageOps::image_of(&page_bytes);
        assert!(
            image.bytes.len() < 5 * n as usize,
            "{} bytes for {n} records",
            image.bytes.len()
        );
        let mut rebuilt = vec![0xA5u8; 16384];
        PageOps::replay(&image.bytes, &mut rebuilt).unwrap();
        let (a, b) = (Page::new(&page_bytes), Page::new(&rebuilt));
        assert_eq!(
            a.records().collect::<Vec<_>>(),
            b.records().collect::<Vec<_>>()
        );
        assert_eq!(rebuilt[12..44], page_bytes[12..44]);
        assert_eq!(
            rebuilt[TYPE_SPECIFIC..HEADER_SIZE],
            page_bytes[TYPE_SPECIFIC..HEADER_SIZE]
        );
        assert_eq!(a.used_space(), b.used_space());
        b.check_slots().unwrap();
    }

    /// Truncated or inconsistent compressed inserts are refused, never applied past the page.
    #[test]
    fn a_compressed_insert_without_its_left_neighbour_is_refused() {
        let mut page = empty_page(4096);
        // op 10 at slot 0 has no left record to share a prefix with.
        let bad = [OP_INSERT_PREFIXED, 0, 0, 4, 1, 0, 7];
        assert_eq!(PageOps::replay(&bad, &mut page), Err(BadPageOps));
        // op 9 with no insert before it.
        let mut page = empty_page(4096);
        assert_eq!(
            PageOps::replay(&[OP_INSERT_NEXT, 0, 1, 7], &mut page),
            Err(BadPageOps)
        );
        // a prefix longer than the left record.
        let mut page = empty_page(4096);
        let mut ops = PageOps::default();
        ops.with_bytes(OP_INSERT, 0, b"ab");
        let mut bytes = ops.bytes.clone();
        bytes.extend_from_slice(&[OP_INSERT_NEXT, 9, 1, 7]);
        assert_eq!(PageOps::replay(&bytes, &mut page), Err(BadPageOps));
    }

    /// Operations of a damaged log that would leave the records' bounds behind (a header write
    /// over the heap fields, a record operation on a page never formatted) fail, never panic
    /// (found by the redo_records fuzz target: a header write moved the heap top and the insert
    /// after it wrote outside the page).
    #[test]
    fn operations_that_would_break_the_record_bounds_are_refused() {
        for field in [40, 44, 48] {
            let mut page = empty_page(4096);
            let mut ops = PageOps::default();
            ops.with_bytes(OP_WRITE, field, &[0xff; 4]);
            ops.with_bytes(OP_INSERT, 0, b"abc");
            assert_eq!(PageOps::replay(&ops.bytes, &mut page), Err(BadPageOps));
            Page::new(&page).check_slots().unwrap();
        }
        let mut unformatted = vec![0u8; 4096];
        let mut ops = PageOps::default();
        ops.with_bytes(OP_INSERT, 0, b"abc");
        assert_eq!(
            PageOps::replay(&ops.bytes, &mut unformatted),
            Err(BadPageOps)
        );
        let mut page = empty_page(4096);
        let mut links = PageOps::default();
        links.with_bytes(OP_WRITE, 36, &7u32.to_le_bytes());
        links.with_bytes(OP_WRITE, TYPE_SPECIFIC, &[1; 12]);
        links.with_bytes(OP_INSERT, 0, b"abc");
        PageOps::replay(&links.bytes, &mut page).unwrap();
        assert_eq!(
            (Page::new(&page).next(), Page::new(&page).record(0)),
            (7, &b"abc"[..])
        );
    }

    #[test]
    fn shared_prefix_counts_leading_equal_bytes() {
        for (a, b, n) in [
            (&b""[..], &b"abc"[..], 0),
            (b"abcdefghijkl", b"abcdefghijkX", 11),
            (b"abcdefgh", b"abcdefgh", 8),
            (b"abcdefghij", b"abcdefgh", 8),
            (b"Xbcdefghij", b"abcdefghij", 0),
            (b"abcdefgXij", b"abcdefghij", 7),
        ] {
            assert_eq!(shared_prefix(a, b), n, "{a:?} {b:?}");
        }
    }

    /// A replacement that changes a few bytes of a long record logs about those bytes.
    #[test]
    fn a_replacement_logs_only_what_changed() {
        let mut buf = empty_page(4096);
        let mut ops = PageOps::default();
        let mut page = PageMut::logged(&mut buf, &mut ops);
        let row = vec![7u8; 200];
        page.insert(0, &row).unwrap();
        let mut changed = row.clone();
        changed[100] = 8;
        let before = ops.bytes.len();
        let mut page = PageMut::logged(&mut buf, &mut ops);
        page.replace(0, &changed).unwrap();
        assert!(
            ops.bytes.len() - before < 16,
            "{} bytes",
            ops.bytes.len() - before
        );
        let mut replayed = empty_page(4096);
        PageOps::replay(&ops.bytes, &mut replayed).unwrap();
        assert_eq!(Page::new(&replayed).record(0), &changed[..]);
    }
}
