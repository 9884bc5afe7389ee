//! Redo records: what a mini-transaction did to each page, and how recovery replays it.
//!
//! A log record's payload (see [`crate::wal`]) is a sequence of page changes:
//!
//! ```text
//! change  := kind u8 | space u32 | page u32 | body
//! kind 1  full page image: body = the whole page (page size bytes)
//! kind 2  byte ranges:     body = count u32, then count x (offset u32 | length u32 | bytes)
//! ```
//!
//! Redo is physical: a change is applied to a page only if the page's LSN is below the record's end
//! LSN, and it leaves the page with that LSN, so replaying twice is harmless. The first change of a
//! page after the fuzzy-checkpoint horizon ([`crate::wal::Wal::fpi_horizon`]) is always a full image,
//! and so is the first change of a freshly allocated page: a page torn by a crash mid-write is
//! rebuilt from that image, never read. The checksum and LSN fields (bytes 0..12) are never part of a
//! range: the LSN is set from the record, the checksum when the page is written.

use crate::page::{read_u32, PageMut};
use crate::{Lsn, PageNo, SpaceId, StorageError};

const KIND_FULL: u8 = 1;
const KIND_RANGES: u8 = 2;
/// Bytes 0..12 (checksum and LSN) are not logged.
const LOGGED_FROM: usize = 12;
/// Unchanged bytes are skipped this many at a time (one memcmp) while diffing a page.
const EQUAL_CHUNK: usize = 64;
/// Equal runs shorter than this inside a change are logged rather than splitting the range.
const MERGE_GAP: usize = 16;

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
}

/// Appends the change from `before` to `after` to a payload; `before = None` logs a full image.
pub fn encode_change(
    out: &mut Vec<u8>,
    space: SpaceId,
    page: PageNo,
    before: Option<&[u8]>,
    after: &[u8],
) {
    let Some(before) = before else {
        out.push(KIND_FULL);
        out.extend_from_slice(&space.to_le_bytes());
        out.extend_from_slice(&page.to_le_bytes());
        out.extend_from_slice(after);
        return;
    };
    let ranges = diff_ranges(before, after);
    out.push(KIND_RANGES);
    out.extend_from_slice(&space.to_le_bytes());
    out.extend_from_slice(&page.to_le_bytes());
    out.extend_from_slice(&(ranges.len() as u32).to_le_bytes());
    for (start, end) in ranges {
        out.extend_from_slice(&(start as u32).to_le_bytes());
        out.extend_from_slice(&((end - start) as u32).to_le_bytes());
        out.extend_from_slice(&after[start..end]);
    }
}

/// The byte ranges in which `after` differs from `before`, nearby ranges merged.
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
        while at < after.len() && before[at] != after[at] {
            at += 1;
        }
        match ranges.last_mut() {
            Some(last) if start - last.1 < MERGE_GAP => last.1 = at,
            _ => ranges.push((start, at)),
        }
    }
    ranges
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
            KIND_RANGES => {
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
                ChangeBody::Ranges(ranges)
            }
            _ => return Err(bad()),
        };
        changes.push(PageChange { space, page, body });
    }
    Ok(changes)
}

/// Applies a change to a page and stamps the record's end LSN.
pub fn apply(change: &ChangeBody, page: &mut [u8], end_lsn: Lsn) {
    match change {
        ChangeBody::Full(image) => page.copy_from_slice(image),
        ChangeBody::Ranges(ranges) => {
            for (offset, bytes) in ranges {
                let start = *offset as usize;
                page[start..start + bytes.len()].copy_from_slice(bytes);
            }
        }
    }
    PageMut::new(page).set_lsn(end_lsn);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_rebuild_the_page_and_full_images_replace_it() {
        let before = vec![0u8; 4096];
        let mut after = before.clone();
        after[100..110].fill(7);
        after[120] = 1;
        after[4000..4096].fill(9);
        after[5] = 3;
        let mut payload = Vec::new();
        encode_change(&mut payload, 3, 9, Some(&before), &after);
        assert!(payload.len() < 150, "ranges are small: {}", payload.len());
        encode_change(&mut payload, 3, 10, None, &after);
        let changes = decode(&payload, 4096).unwrap();
        assert_eq!(changes.len(), 2);
        let mut page = before.clone();
        apply(&changes[0].body, &mut page, 77);
        assert_eq!(page[12..], after[12..]);
        assert_eq!(crate::page::Page::new(&page).lsn(), 77);
        let mut torn = vec![0xAB; 4096];
        apply(&changes[1].body, &mut torn, 78);
        assert_eq!(torn[12..], after[12..]);
        assert!(decode(&payload[..payload.len() - 1], 4096).is_err());
    }
}
