//! Overflow chains: values too large to stay in their leaf record.
//!
//! ```text
//! overflow page  | header (type Overflow, next = next page of the chain) | data ... |
//!                type-specific bytes 0..4: data bytes on this page (u32)
//! ```
//!
//! A chain belongs to exactly one leaf record and is only read or changed under that leaf's latch, so
//! it needs no latching of its own. Chains are allocated from the tree's leaf segment, written as
//! fresh pages (logged as zeroed pages plus their bytes by the mini-transaction and released at
//! once, so a long chain does not pin many frames) and freed with the record.

use std::sync::Arc;

use crate::buffer_pool::{AccessHint, BufferPool};
use crate::mtr::Mtr;
use crate::page::{read_u32, write_u32, Page, PageType, HEADER_SIZE, NO_PAGE, TYPE_SPECIFIC};
use crate::space::{SegmentId, Space};
use crate::{PageNo, Result, StorageError};

/// Data bytes one overflow page holds.
pub fn capacity(page_size: usize) -> usize {
    page_size - HEADER_SIZE
}

/// Writes `value` into a new chain allocated from `segment`; returns its first page.
pub fn write_chain(
    mtr: &mut Mtr<'_>,
    space: &Arc<Space>,
    segment: SegmentId,
    index_id: u64,
    value: &[u8],
) -> Result<PageNo> {
    let per_page = capacity(space.page_size());
    let pieces: Vec<&[u8]> = value.chunks(per_page).collect();
    let pages = (0..pieces.len())
        .map(|_| space.allocate_page(mtr, segment))
        .collect::<Result<Vec<PageNo>>>()?;
    for (i, piece) in pieces.iter().enumerate() {
        let handle = mtr.create(space, pages[i])?;
        let mut page = mtr.edit(handle);
        page.format(PageType::Overflow, space.id(), pages[i], index_id, 0);
        page.set_next(pages.get(i + 1).copied().unwrap_or(NO_PAGE));
        write_u32(page.bytes_mut(), TYPE_SPECIFIC, piece.len() as u32);
        page.bytes_mut()[HEADER_SIZE..HEADER_SIZE + piece.len()].copy_from_slice(piece);
        mtr.spill_fresh(handle);
    }
    Ok(pages[0])
}

/// Reads a chain of `len` bytes starting at `first`; returns the value and the chain's pages.
pub fn read_chain(
    pool: &BufferPool,
    space: &Arc<Space>,
    index_id: u64,
    first: PageNo,
    len: u32,
) -> Result<(Vec<u8>, Vec<PageNo>)> {
    let mut value = Vec::with_capacity(len as usize);
    let mut pages = Vec::new();
    let mut next = first;
    while value.len() < len as usize {
        if next == NO_PAGE || pages.len() > len as usize {
            return Err(StorageError::corrupt(
                space.id(),
                pages.last().copied().unwrap_or(first),
                format!("overflow chain ends after {} of {len} bytes", value.len()),
            ));
        }
        let guard = pool.fetch_read(space, next, AccessHint::Normal)?;
        let page = Page::new(&guard);
        let here = read_u32(&guard, TYPE_SPECIFIC) as usize;
        if page.page_type() != PageType::Overflow
            || page.index_id() != index_id
            || here > capacity(page.size())
        {
            return Err(StorageError::corrupt(
                space.id(),
                next,
                "expected an overflow page of this index",
            ));
        }
        value.extend_from_slice(&guard[HEADER_SIZE..HEADER_SIZE + here]);
        pages.push(next);
        next = page.next();
    }
    if value.len() != len as usize {
        return Err(StorageError::corrupt(
            space.id(),
            first,
            format!(
                "overflow chain holds {} bytes, its record says {len}",
                value.len()
            ),
        ));
    }
    Ok((value, pages))
}

/// Frees the pages of a chain within `mtr`.
pub fn free_chain(mtr: &mut Mtr<'_>, space: &Arc<Space>, pages: &[PageNo]) -> Result<()> {
    pages
        .iter()
        .try_for_each(|&page| space.free_page(mtr, page))
}
