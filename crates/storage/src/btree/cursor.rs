//! Range scans, forward and backward.
//!
//! A scan holds one leaf at a time: it reads every entry of the leaf within its bounds into a buffer,
//! releases the leaf, and finds the next leaf by a fresh descent from the key bound the leaf ended
//! at (the separator its parent gave it). Scans therefore never latch sideways or hold a page while
//! the caller works, cannot deadlock with writers, and survive splits and merges between steps.
//! Leaves are read with [`AccessHint::Scan`] so that a long scan does not push the hot set out of
//! the buffer pool. Entries changed while a scan runs may or may not be seen; entries that were in
//! the range before the scan began and were not touched are seen exactly once, in order.

use std::collections::VecDeque;
use std::ops::Bound;

use super::{node, BTree};
use crate::buffer_pool::{AccessHint, PageReadGuard};
use crate::page::Page;
use crate::Result;

/// Which leaf a descent goes to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Seek<'k> {
    First,
    Last,
    /// The leaf whose range holds `key`.
    AtOrAfter(&'k [u8]),
    /// The leaf whose range holds the keys just below `key`.
    Before(&'k [u8]),
}

impl Seek<'_> {
    pub(crate) fn branch_slot(&self, page: Page<'_>) -> usize {
        match self {
            Seek::First => 0,
            Seek::Last => page.slot_count() - 1,
            Seek::AtOrAfter(key) => node::branch_search(page, key, false),
            Seek::Before(key) => node::branch_search(page, key, true),
        }
    }
}

/// The key range a leaf covers, from the separators met on the way down: `lower <= key < upper`,
/// `None` meaning unbounded (the leftmost or rightmost leaf).
#[derive(Debug, Default)]
pub(crate) struct Bounds {
    pub lower: Option<Vec<u8>>,
    pub upper: Option<Vec<u8>>,
}

impl Bounds {
    /// Narrows the bounds to child `slot` of a branch page.
    pub(crate) fn narrow(&mut self, page: Page<'_>, slot: usize) {
        if slot > 0 {
            self.lower = Some(node::branch_key(page.record(slot)).to_vec());
        }
        if slot + 1 < page.slot_count() {
            self.upper = Some(node::branch_key(page.record(slot + 1)).to_vec());
        }
    }
}

/// A read-latched leaf and its key range.
pub(crate) struct Leaf<'t> {
    pub guard: PageReadGuard<'t>,
    pub bounds: Bounds,
}

/// The entries of a key range, in order; each is `Ok((key, value))` or the error that ended the scan.
pub struct RangeIter<'t> {
    tree: &'t BTree,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    reverse: bool,
    buffer: VecDeque<(Vec<u8>, Vec<u8>)>,
    done: bool,
}

impl BTree {
    /// Entries with keys in `start..end` (as bounds), in ascending key order.
    pub fn range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> RangeIter<'_> {
        RangeIter::new(self, start, end, false)
    }

    /// Entries with keys in `start..end` (as bounds), in descending key order.
    pub fn range_rev(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> RangeIter<'_> {
        RangeIter::new(self, start, end, true)
    }
}

impl<'t> RangeIter<'t> {
    fn new(tree: &'t BTree, start: Bound<&[u8]>, end: Bound<&[u8]>, reverse: bool) -> Self {
        RangeIter {
            tree,
            lower: start.map(<[u8]>::to_vec),
            upper: end.map(<[u8]>::to_vec),
            reverse,
            buffer: VecDeque::new(),
            done: false,
        }
    }

    fn below_lower(&self, key: &[u8]) -> bool {
        match &self.lower {
            Bound::Unbounded => false,
            Bound::Included(low) => key < low.as_slice(),
            Bound::Excluded(low) => key <= low.as_slice(),
        }
    }

    fn above_upper(&self, key: &[u8]) -> bool {
        match &self.upper {
            Bound::Unbounded => false,
            Bound::Included(high) => key > high.as_slice(),
            Bound::Excluded(high) => key >= high.as_slice(),
        }
    }

    /// Buffers the in-range entries of the next leaf going up.
    fn fill_forward(&mut self) -> Result<()> {
        let seek = match &self.lower {
            Bound::Unbounded => Seek::First,
            Bound::Included(key) | Bound::Excluded(key) => Seek::AtOrAfter(key),
        };
        let leaf = self.tree.descend_read(seek, AccessHint::Scan, true)?;
        let page = Page::new(&leaf.guard);
        let start = match &self.lower {
            Bound::Unbounded => 0,
            Bound::Included(key) => node::leaf_search(page, key).unwrap_or_else(|slot| slot),
            Bound::Excluded(key) => {
                node::leaf_search(page, key).map_or_else(|slot| slot, |slot| slot + 1)
            }
        };
        for slot in start..page.slot_count() {
            let record = page.record(slot);
            let key = node::leaf_key(record);
            if self.above_upper(key) {
                self.done = true;
                return Ok(());
            }
            let value = self.tree.load_value(record)?;
            self.buffer.push_back((key.to_vec(), value));
        }
        match leaf.bounds.upper {
            Some(upper) => self.lower = Bound::Included(upper),
            None => self.done = true,
        }
        Ok(())
    }

    /// Buffers the in-range entries of the next leaf going down.
    fn fill_backward(&mut self) -> Result<()> {
        let seek = match &self.upper {
            Bound::Unbounded => Seek::Last,
            Bound::Included(key) => Seek::AtOrAfter(key),
            Bound::Excluded(key) => Seek::Before(key),
        };
        let leaf = self.tree.descend_read(seek, AccessHint::Scan, true)?;
        let page = Page::new(&leaf.guard);
        let end = match &self.upper {
            Bound::Unbounded => page.slot_count(),
            Bound::Included(key) => {
                node::leaf_search(page, key).map_or_else(|slot| slot, |slot| slot + 1)
            }
            Bound::Excluded(key) => node::leaf_search(page, key).unwrap_or_else(|slot| slot),
        };
        for slot in (0..end).rev() {
            let record = page.record(slot);
            let key = node::leaf_key(record);
            if self.below_lower(key) {
                self.done = true;
                return Ok(());
            }
            let value = self.tree.load_value(record)?;
            self.buffer.push_back((key.to_vec(), value));
        }
        match leaf.bounds.lower {
            Some(lower) => self.upper = Bound::Excluded(lower),
            None => self.done = true,
        }
        Ok(())
    }
}

impl Iterator for RangeIter<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(entry) = self.buffer.pop_front() {
                return Some(Ok(entry));
            }
            if self.done {
                return None;
            }
            let filled = if self.reverse {
                self.fill_backward()
            } else {
                self.fill_forward()
            };
            if let Err(err) = filled {
                self.done = true;
                return Some(Err(err));
            }
        }
    }
}
