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
//! 52    12    type-specific (the owner of the page type defines it)
//! ```
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
    fn heap_top(&self) -> usize {
        read_u32(self.buf, 44) as usize
    }
    fn garbage(&self) -> usize {
        read_u32(self.buf, 48) as usize
    }
    fn free_start(&self) -> usize {
        HEADER_SIZE + SLOT_SIZE * self.slot_count()
    }
    fn slot_offset(&self, index: usize) -> usize {
        read_u16(self.buf, HEADER_SIZE + SLOT_SIZE * index) as usize
    }

    /// The bytes of record `index` (in slot order).
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
/// ```
///
/// Replaying the operations, in order, on the page as it was before them gives the page as it is:
/// every operation is a function of the page's bytes and its arguments. `raw` is set when a caller
/// took the page's bytes to lay them out itself, which no operation describes: the page is then
/// logged whole.
#[derive(Debug, Default)]
pub struct PageOps {
    pub(crate) bytes: Vec<u8>,
    pub(crate) raw: bool,
}

const OP_INSERT: u8 = 1;
const OP_REMOVE: u8 = 2;
const OP_REPLACE: u8 = 3;
const OP_WRITE: u8 = 4;
const OP_FORMAT: u8 = 5;
const OP_COMPACT: u8 = 6;
const OP_CLEAR: u8 = 7;
const OP_TRUNCATE: u8 = 8;

/// A redo record's page operations do not fit the page they name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadPageOps;

impl PageOps {
    fn op(&mut self, op: u8, slot: usize) {
        self.bytes.push(op);
        self.bytes.extend_from_slice(&(slot as u16).to_le_bytes());
    }

    fn with_bytes(&mut self, op: u8, at: usize, bytes: &[u8]) {
        self.op(op, at);
        self.bytes
            .extend_from_slice(&(bytes.len() as u16).to_le_bytes());
        self.bytes.extend_from_slice(bytes);
    }

    /// Replays encoded operations on `page`.
    pub fn replay(mut ops: &[u8], page: &mut [u8]) -> Result<(), BadPageOps> {
        while let Some((&op, rest)) = ops.split_first() {
            ops = rest;
            replay_one(op, &mut ops, page).ok_or(BadPageOps)?;
        }
        Ok(())
    }
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

fn replay_one(op: u8, ops: &mut &[u8], page: &mut [u8]) -> Option<()> {
    let count = Page::new(page).slot_count();
    match op {
        OP_INSERT | OP_REPLACE | OP_WRITE => {
            let at = take_u16(ops)?;
            let len = take_u16(ops)?;
            let bytes = take(ops, len)?;
            match op {
                OP_INSERT if at <= count => insert_record(page, at, bytes).ok(),
                OP_REPLACE if at < count => replace_record(page, at, bytes).ok(),
                OP_WRITE if at >= 12 && at + len <= page.len() => {
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

    fn log(&mut self, entry: impl FnOnce(&mut PageOps)) {
        if let Some(ops) = self.ops.as_deref_mut() {
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
        self.log(|ops| {
            ops.bytes.push(OP_FORMAT);
            ops.bytes
                .extend_from_slice(&(page_type as u16).to_le_bytes());
            ops.bytes.extend_from_slice(&level.to_le_bytes());
            ops.bytes.extend_from_slice(&space.to_le_bytes());
            ops.bytes.extend_from_slice(&page_no.to_le_bytes());
            ops.bytes.extend_from_slice(&index_id.to_le_bytes());
        });
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
        self.log(|ops| ops.with_bytes(OP_INSERT, index, record));
        Ok(())
    }

    /// Removes record `index`; its bytes become garbage until the next compaction.
    pub fn remove(&mut self, index: usize) {
        remove_record(self.buf, index);
        self.log(|ops| ops.op(OP_REMOVE, index));
    }

    /// Replaces record `index` with `record`; on `PageFull` the page is unchanged.
    pub fn replace(&mut self, index: usize, record: &[u8]) -> Result<(), PageFull> {
        replace_record(self.buf, index, record)?;
        self.log(|ops| ops.with_bytes(OP_REPLACE, index, record));
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

fn compact_records(buf: &mut [u8]) {
    let records: Vec<Vec<u8>> = Page::new(buf).records().map(<[u8]>::to_vec).collect();
    clear_records(buf);
    for (index, record) in records.iter().enumerate() {
        insert_record(buf, index, record).expect("compaction never grows the records");
    }
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
}
