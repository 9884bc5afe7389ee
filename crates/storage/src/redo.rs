//! Redo records: what a mini-transaction did to each page, and how recovery replays it.
//!
//! A log record's payload (see [`crate::wal`]) is a sequence of page changes:
//!
//! ```text
//! change  := kind u8 | space u32 | page u32 | body
//! kind 1  full page image: body = the whole page (page size bytes)
//! kind 2  byte ranges:     body = count u32, then count x (offset u32 | length u32 | bytes)
//! kind 3  zeroed page:     body as kind 2; the page is all zeros before the ranges are applied
//! kind 4  page operations: body = length u32, then the operations (see `page::PageOps`)
//! kind 5  rebuilt page:    body as kind 4; the page is all zeros before the operations replay
//! ```
//!
//! Redo is physical: a change is applied to a page only if the page's LSN is below the record's end
//! LSN, and it leaves the page with that LSN, so replaying twice is harmless. Recovery reads a page
//! to replay a change onto it only after the doublewrite area
//! ([`crate::buffer_pool::doublewrite`]) has put back any page a crash tore, so no change is logged
//! as a full image for torn-page protection. The first change of a freshly allocated page is
//! "zeroed, then its non-zero bytes" (kind 3), replayed without reading the page.
//!
//! A B+tree page logged whole (its operations would outweigh it) is logged as kind 5 instead, the
//! operations that build it from zeros (`PageOps::image_of`: format, links, then its records, each
//! after the prefix it shares with the one before): as self-contained as an image, at a few bytes a
//! record where the records are sorted keys. A fresh page changed only by operations is logged as
//! those operations. The checksum and LSN fields (bytes 0..12) are
//! never part of a range: the LSN is set from the record, the checksum when the page is written.
//!
//! Most changes are kind 4: the B+tree changes pages through [`PageMut`]'s operations (insert this
//! record at this slot, remove that one, set the next-page link), and those operations are the redo,
//! replayed by the same code on the page as it was (physiological redo, as in InnoDB and
//! PostgreSQL). Logging a row costs the row and a few bytes. Only pages changed as raw bytes (space
//! metadata) are compared with a copy taken before their first change ([`encode_diff`], kind 2).

use crate::page::{read_u32, BadPageOps, PageMut, PageOps, PageType};
use crate::{Lsn, PageNo, SpaceId, StorageError};

const KIND_FULL: u8 = 1;
const KIND_RANGES: u8 = 2;
const KIND_ZEROED: u8 = 3;
const KIND_OPS: u8 = 4;
const KIND_REBUILT: u8 = 5;
/// Bytes 0..12 (checksum and LSN) are not logged.
const LOGGED_FROM: usize = 12;
/// Unchanged bytes are skipped this many at a time (one memcmp) while diffing a page.
const EQUAL_CHUNK: usize = 64;
/// Equal runs shorter than this inside a change are logged rather than splitting the range.
const MERGE_GAP: usize = 16;
/// All zeros, to find a fresh page's non-zero bytes.
static ZEROS: [u8; crate::page::MAX_PAGE_SIZE] = [0; crate::page::MAX_PAGE_SIZE];

/// One page's change, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageChange {
    pub space: SpaceId,
    pub page: PageNo,
    pub body: ChangeBody,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeBody {
    Full(Vec<u8>),
    Ranges(Vec<(u32, Vec<u8>)>),
    /// The page is zeroed, then the ranges are applied.
    Zeroed(Vec<(u32, Vec<u8>)>),
    /// Page operations, replayed in order.
    Ops(Vec<u8>),
    /// The page is zeroed, then the operations are replayed.
    Rebuilt(Vec<u8>),
}

impl ChangeBody {
    /// Whether the change makes the page whole without reading it (an image, or a page rebuilt
    /// from zeros): recovery then never reads a page a crash may have torn.
    pub fn is_self_contained(&self) -> bool {
        matches!(
            self,
            ChangeBody::Full(_) | ChangeBody::Zeroed(_) | ChangeBody::Rebuilt(_)
        )
    }
}

fn encode_header(out: &mut Vec<u8>, kind: u8, space: SpaceId, page: PageNo) {
    out.push(kind);
    out.extend_from_slice(&space.to_le_bytes());
    out.extend_from_slice(&page.to_le_bytes());
}

/// Appends a full image of `page`.
pub fn encode_full(out: &mut Vec<u8>, space: SpaceId, page_no: PageNo, page: &[u8]) {
    encode_header(out, KIND_FULL, space, page_no);
    out.extend_from_slice(page);
}

/// Appends the operations a logged [`PageMut`] made on a page (see [`PageOps`]).
pub fn encode_ops(out: &mut Vec<u8>, space: SpaceId, page_no: PageNo, ops: &[u8]) {
    encode_header(out, KIND_OPS, space, page_no);
    out.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    out.extend_from_slice(ops);
}

/// Appends a page as the operations that build it from a zeroed page.
pub fn encode_rebuilt(out: &mut Vec<u8>, space: SpaceId, page_no: PageNo, ops: &[u8]) {
    encode_header(out, KIND_REBUILT, space, page_no);
    out.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    out.extend_from_slice(ops);
}

/// Appends the ranges in which `page` differs from `before`.
pub fn encode_diff(out: &mut Vec<u8>, space: SpaceId, page_no: PageNo, before: &[u8], page: &[u8]) {
    let ranges = diff_ranges(before, page);
    encode_range_body(out, KIND_RANGES, space, page_no, page, &ranges);
}

/// Appends a freshly allocated `page` as "zeroed, then its non-zero bytes".
pub fn encode_zeroed(out: &mut Vec<u8>, space: SpaceId, page_no: PageNo, page: &[u8]) {
    let ranges = diff_ranges(&ZEROS[..page.len()], page);
    encode_range_body(out, KIND_ZEROED, space, page_no, page, &ranges);
}

fn encode_range_body(
    out: &mut Vec<u8>,
    kind: u8,
    space: SpaceId,
    page_no: PageNo,
    page: &[u8],
    ranges: &[(usize, usize)],
) {
    encode_header(out, kind, space, page_no);
    out.extend_from_slice(&(ranges.len() as u32).to_le_bytes());
    for &(start, end) in ranges {
        out.extend_from_slice(&(start as u32).to_le_bytes());
        out.extend_from_slice(&((end - start) as u32).to_le_bytes());
        out.extend_from_slice(&page[start..end]);
    }
}

/// The byte ranges in which `after` differs from `before`, nearby ranges merged. Compared a word
/// of [`WORD`] bytes at a time (a fresh leaf of a bulk build differs from zeros almost
/// everywhere): a change runs until a whole equal word, then loses its equal tail.
fn diff_ranges(before: &[u8], after: &[u8]) -> Vec<(usize, usize)> {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut at = LOGGED_FROM;
    while at < after.len() {
        let chunk_end = (at + EQUAL_CHUNK).min(after.len());
        if before[at..chunk_end] == after[at..chunk_end] {
            at = chunk_end;
            continue;
        }
        while before[at] == after[at] {
            at += 1;
        }
        let start = at;
        while at < after.len() && !equal_word(before, after, at) {
            at = (at + WORD).min(after.len());
        }
        let mut end = at;
        while before[end - 1] == after[end - 1] {
            end -= 1;
        }
        match ranges.last_mut() {
            Some(last) if start - last.1 < MERGE_GAP => last.1 = end,
            _ => ranges.push((start, end)),
        }
    }
    ranges
}

/// Bytes compared at once while a change lasts.
const WORD: usize = 16;

/// Whether the [`WORD`] bytes at `at` (fewer at the end) are equal in both.
fn equal_word(before: &[u8], after: &[u8], at: usize) -> bool {
    let end = (at + WORD).min(after.len());
    match (before[at..end].try_into(), after[at..end].try_into()) {
        (Ok(a), Ok(b)) => u128::from_ne_bytes(a) == u128::from_ne_bytes(b),
        _ => before[at..end] == after[at..end],
    }
}

/// Decodes a record payload into page changes; `page_size` is the database's page size.
pub fn decode(payload: &[u8], page_size: usize) -> Result<Vec<PageChange>, StorageError> {
    let bad = || StorageError::Format("malformed redo record".into());
    let mut changes = Vec::new();
    let mut at = 0;
    let take = |at: &mut usize, len: usize| -> Result<std::ops::Range<usize>, StorageError> {
        let range = *at..at
            .checked_add(len)
            .filter(|&e| e <= payload.len())
            .ok_or_else(bad)?;
        *at = range.end;
        Ok(range)
    };
    while at < payload.len() {
        let kind = payload[take(&mut at, 1)?][0];
        let space = read_u32(payload, take(&mut at, 4)?.start);
        let page = read_u32(payload, take(&mut at, 4)?.start);
        let body = match kind {
            KIND_FULL => ChangeBody::Full(payload[take(&mut at, page_size)?].to_vec()),
            KIND_OPS | KIND_REBUILT => {
                let len = read_u32(payload, take(&mut at, 4)?.start) as usize;
                let ops = payload[take(&mut at, len)?].to_vec();
                if kind == KIND_OPS {
                    ChangeBody::Ops(ops)
                } else {
                    ChangeBody::Rebuilt(ops)
                }
            }
            KIND_RANGES | KIND_ZEROED => {
                let count = read_u32(payload, take(&mut at, 4)?.start);
                let mut ranges = Vec::new();
                for _ in 0..count {
                    let offset = read_u32(payload, take(&mut at, 4)?.start);
                    let len = read_u32(payload, take(&mut at, 4)?.start) as usize;
                    if offset as usize + len > page_size || (offset as usize) < LOGGED_FROM {
                        return Err(bad());
                    }
                    ranges.push((offset, payload[take(&mut at, len)?].to_vec()));
                }
                if kind == KIND_ZEROED {
                    ChangeBody::Zeroed(ranges)
                } else {
                    ChangeBody::Ranges(ranges)
                }
            }
            _ => return Err(bad()),
        };
        changes.push(PageChange { space, page, body });
    }
    Ok(changes)
}

/// Applies a change to a page and stamps the record's end LSN. Fails only if page operations do not
/// fit the page, or bytes copied into a B+tree page leave its records inconsistent (a damaged log,
/// or one that does not belong to this data): the pool never holds a page whose records could not
/// be read safely.
pub fn apply(change: &ChangeBody, page: &mut [u8], end_lsn: Lsn) -> Result<(), BadPageOps> {
    match change {
        ChangeBody::Full(image) => copy_image(image, page)?,
        ChangeBody::Ranges(ranges) => copy_ranges(ranges, page)?,
        ChangeBody::Zeroed(ranges) => {
            page.fill(0);
            copy_ranges(ranges, page)?;
        }
        ChangeBody::Ops(ops) => PageOps::replay(ops, page)?,
        ChangeBody::Rebuilt(ops) => {
            page.fill(0);
            PageOps::replay(ops, page)?;
        }
    }
    PageMut::new(page).set_lsn(end_lsn);
    Ok(())
}

fn copy_image(image: &[u8], page: &mut [u8]) -> Result<(), BadPageOps> {
    if image.len() != page.len() {
        return Err(BadPageOps);
    }
    page.copy_from_slice(image);
    records_consistent(page)
}

fn copy_ranges(ranges: &[(u32, Vec<u8>)], page: &mut [u8]) -> Result<(), BadPageOps> {
    for (offset, bytes) in ranges {
        let start = *offset as usize;
        let target = page.get_mut(start..start + bytes.len()).ok_or(BadPageOps)?;
        target.copy_from_slice(bytes);
    }
    records_consistent(page)
}

/// Whether a page that holds records (a B+tree leaf or branch) has them consistent.
fn records_consistent(page: &[u8]) -> Result<(), BadPageOps> {
    let view = crate::page::Page::new(page);
    match view.page_type() {
        PageType::Leaf | PageType::Branch => view.check_slots().map_err(|_| BadPageOps),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::{Page, PageType};

    #[test]
    fn diffs_rebuild_the_page_and_full_images_replace_it() {
        let before = vec![0u8; 4096];
        let mut after = before.clone();
        after[100..110].fill(7);
        after[120] = 1;
        after[4000..4096].fill(9);
        after[5] = 3;
        let mut payload = Vec::new();
        encode_diff(&mut payload, 3, 9, &before, &after);
        assert!(payload.len() < 150, "ranges are small: {}", payload.len());
        encode_full(&mut payload, 3, 10, &after);
        let changes = decode(&payload, 4096).unwrap();
        assert_eq!(changes.len(), 2);
        let mut page = before.clone();
        apply(&changes[0].body, &mut page, 77).unwrap();
        assert_eq!(page[12..], after[12..]);
        assert_eq!(crate::page::Page::new(&page).lsn(), 77);
        let mut torn = vec![0xAB; 4096];
        apply(&changes[1].body, &mut torn, 78).unwrap();
        assert_eq!(torn[12..], after[12..]);
        assert!(decode(&payload[..payload.len() - 1], 4096).is_err());
    }

    /// Bytes copied into a B+tree page that leave its records out of bounds (a damaged log) fail
    /// the change instead of putting a page in the pool that readers would trip over.
    #[test]
    fn ranges_that_break_a_leafs_records_are_refused() {
        let mut before = vec![0u8; 4096];
        crate::page::PageMut::new(&mut before).format(PageType::Leaf, 3, 9, 1, 0);
        let mut after = before.clone();
        crate::page::write_u32(&mut after, 44, 100_000);
        let mut payload = Vec::new();
        encode_diff(&mut payload, 3, 9, &before, &after);
        let changes = decode(&payload, 4096).unwrap();
        let mut page = before.clone();
        assert_eq!(apply(&changes[0].body, &mut page, 5), Err(BadPageOps));
        let mut good = before.clone();
        crate::page::write_u32(&mut good, 36, 12);
        let mut payload = Vec::new();
        encode_diff(&mut payload, 3, 9, &before, &good);
        let mut page = before.clone();
        apply(&decode(&payload, 4096).unwrap()[0].body, &mut page, 5).unwrap();
        assert_eq!(Page::new(&page).next(), 12);
    }

    /// Whatever changed, the ranges rebuild the page, and no logged byte lies in an equal run
    /// long enough to split a range: the diff is exact up to merged gaps.
    #[test]
    fn diffs_rebuild_any_change_exactly() {
        use proptest::prelude::*;
        let edit = (0usize..4096, 1usize..300, any::<u8>());
        proptest!(ProptestConfig::with_cases(300), |(
            seed in any::<u8>(),
            edits in proptest::collection::vec(edit, 0..12),
        )| {
            let before: Vec<u8> = (0..4096).map(|i| (i as u8).wrapping_mul(seed)).collect();
            let mut after = before.clone();
            for (at, len, byte) in edits {
                let end = (at + len).min(after.len());
                after[at..end].fill(byte);
            }
            let ranges = diff_ranges(&before, &after);
            let mut rebuilt = before.clone();
            for &(start, end) in &ranges {
                prop_assert!(start >= LOGGED_FROM && start < end && end <= after.len());
                prop_assert!(before[start] != after[start] && before[end - 1] != after[end - 1]);
                rebuilt[start..end].copy_from_slice(&after[start..end]);
            }
            prop_assert_eq!(&rebuilt[LOGGED_FROM..], &after[LOGGED_FROM..]);
            for pair in ranges.windows(2) {
                prop_assert!(pair[1].0 - pair[0].1 >= MERGE_GAP);
            }
        });
    }

    #[test]
    fn a_zeroed_page_is_rebuilt_over_a_torn_one_from_its_few_bytes() {
        let mut page = vec![0u8; 4096];
        let mut edit = PageMut::new(&mut page);
        edit.format(PageType::Leaf, 3, 11, 5, 0);
        edit.insert(0, b"first record").unwrap();
        let mut payload = Vec::new();
        encode_zeroed(&mut payload, 3, 11, &page);
        assert!(
            payload.len() < 200,
            "a nearly empty page is small: {}",
            payload.len()
        );
        let changes = decode(&payload, 4096).unwrap();
        let mut torn = vec![0xCD; 4096];
        apply(&changes[0].body, &mut torn, 90).unwrap();
        assert_eq!(torn[12..], page[12..]);
        assert_eq!(Page::new(&torn).record(0), b"first record");
    }

    /// Operations made through a logged `PageMut`, replayed on the page as it was, give the page
    /// as it is, byte for byte; a replay on a page they do not fit fails instead of panicking.
    #[test]
    fn logged_operations_replay_to_the_same_page() {
        use proptest::prelude::*;
        let op = prop_oneof![
            (any::<u16>(), proptest::collection::vec(any::<u8>(), 0..300))
                .prop_map(|(at, r)| (0u8, at, r)),
            any::<u16>().prop_map(|at| (1u8, at, Vec::new())),
            (any::<u16>(), proptest::collection::vec(any::<u8>(), 0..300))
                .prop_map(|(at, r)| (2u8, at, r)),
            any::<u16>().prop_map(|at| (3u8, at, Vec::new())),
            Just((4u8, 0, Vec::new())),
            any::<u16>().prop_map(|at| (5u8, at, Vec::new())),
            Just((6u8, 0, Vec::new())),
            Just((7u8, 0, Vec::new())),
        ];
        proptest!(ProptestConfig::with_cases(300), |(
            seed in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..20),
            ops in proptest::collection::vec(op, 1..40),
        )| {
            let mut page = vec![0u8; 4096];
            let mut setup = PageMut::new(&mut page);
            setup.format(PageType::Leaf, 1, 2, 3, 0);
            for (i, record) in seed.iter().enumerate() {
                if setup.insert(i, record).is_err() {
                    break;
                }
            }
            let before = page.clone();
            let mut logged = PageOps::default();
            let mut edit = PageMut::logged(&mut page, &mut logged);
            for (kind, at, record) in ops {
                let count = edit.view().slot_count();
                match kind {
                    0 => { let _ = edit.insert(usize::from(at) % (count + 1), &record); }
                    1 if count > 0 => edit.remove(usize::from(at) % count),
                    2 if count > 0 => { let _ = edit.replace(usize::from(at) % count, &record); }
                    3 => edit.set_next(u32::from(at)),
                    4 => edit.compact(),
                    5 => edit.truncate(usize::from(at) % (count + 1)),
                    6 => edit.clear_records(),
                    7 => edit.format(PageType::Branch, 1, 2, 3, 1),
                    _ => {}
                }
            }
            let mut payload = Vec::new();
            encode_ops(&mut payload, 1, 2, &logged.bytes);
            let changes = decode(&payload, 4096).unwrap();
            let mut replayed = before.clone();
            apply(&changes[0].body, &mut replayed, 5).unwrap();
            prop_assert_eq!(&replayed[12..], &page[12..]);
            let mut empty = vec![0u8; 4096];
            PageMut::new(&mut empty).format(PageType::Leaf, 1, 2, 3, 0);
            let _ = apply(&changes[0].body, &mut empty, 6);
        });
    }
}
