//! Range scans, forward and backward.
//!
//! A scan holds one leaf at a time: it copies every entry of the leaf within its bounds into an
//! [`Entries`] buffer (keys and values side by side in one allocation, reused from leaf to leaf),
//! releases the leaf, and finds the next leaf by a fresh descent from the key bound the leaf ended
//! at (the separator its parent gave it). Scans therefore never latch sideways or hold a page while
//! the caller works, cannot deadlock with writers, and survive splits and merges between steps.
//! Leaves are read with [`AccessHint::Scan`] so that a long scan does not push the hot set out of
//! the buffer pool. Entries changed while a scan runs may or may not be seen; entries that were in
//! the range before the scan began and were not touched are seen exactly once, in order.

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

/// Entries copied out of a leaf: every key and value in one byte buffer, so that copying a leaf
/// costs no allocation per entry once the buffer has grown to a leaf's size.
#[derive(Debug, Default)]
pub struct Entries {
    bytes: Vec<u8>,
    /// Per entry: where its key starts, where its value starts (the key's end), where it ends.
    spans: Vec<[u32; 3]>,
}

impl Entries {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub fn key(&self, entry: usize) -> &[u8] {
        let [key, value, _] = self.spans[entry];
        &self.bytes[key as usize..value as usize]
    }

    pub fn value(&self, entry: usize) -> &[u8] {
        let [_, value, end] = self.spans[entry];
        &self.bytes[value as usize..end as usize]
    }

    /// The entry with `key`, for entries in key order (as a leaf gives them).
    pub fn find(&self, key: &[u8]) -> Option<usize> {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let middle = (low + high) / 2;
            match self.key(middle).cmp(key) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Some(middle),
            }
        }
        None
    }

    /// Appends an entry after the others.
    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        let start = self.offset();
        self.bytes.extend_from_slice(key);
        let value_start = self.offset();
        self.bytes.extend_from_slice(value);
        self.spans.push([start, value_start, self.offset()]);
    }

    /// Puts the entries in key order (equal keys keep their order).
    pub fn sort_by_key(&mut self) {
        let bytes = &self.bytes;
        let key = |[start, end, _]: &[u32; 3]| &bytes[*start as usize..*end as usize];
        self.spans.sort_by(|a, b| key(a).cmp(key(b)));
    }

    /// Makes room for `entries` more entries of `bytes` bytes in all.
    fn reserve(&mut self, entries: usize, bytes: usize) {
        self.spans.reserve(entries);
        self.bytes.reserve(bytes);
    }

    fn offset(&self) -> u32 {
        u32::try_from(self.bytes.len()).expect("a leaf's entries fit in 4 GiB")
    }

    /// Appends the entry of a leaf record, reading an overflowed value from its chain.
    fn push_record(&mut self, tree: &BTree, record: &[u8]) -> Result<()> {
        let key = node::leaf_key(record);
        match node::leaf_value(record) {
            node::StoredValue::Inline(value) => self.push(key, value),
            node::StoredValue::Overflow { .. } => self.push(key, &tree.load_value(record)?),
        }
        Ok(())
    }
}

/// The entries of a key range, in order; each is `Ok((key, value))` or the error that ended the scan.
pub struct RangeIter<'t> {
    tree: &'t BTree,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    reverse: bool,
    buffer: Entries,
    /// The next entry of `buffer` to give.
    position: usize,
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
            buffer: Entries::default(),
            position: 0,
            done: false,
        }
    }

    /// Buffers the in-range entries of the next leaf in the scan's direction.
    fn fill(&mut self) -> Result<()> {
        let (lower, upper) = (self.lower.as_ref(), self.upper.as_ref());
        let (lower, upper) = (lower.map(Vec::as_slice), upper.map(Vec::as_slice));
        self.position = 0;
        if self.reverse {
            match self.tree.read_leaf_rev(lower, upper, &mut self.buffer)? {
                Some(next) => self.upper = Bound::Excluded(next),
                None => self.done = true,
            }
        } else {
            match self.tree.read_leaf(lower, upper, &mut self.buffer)? {
                Some(next) => self.lower = Bound::Included(next),
                None => self.done = true,
            }
        }
        Ok(())
    }
}

fn below(key: &[u8], lower: Bound<&[u8]>) -> bool {
    match lower {
        Bound::Unbounded => false,
        Bound::Included(low) => key < low,
        Bound::Excluded(low) => key <= low,
    }
}

fn above(key: &[u8], upper: Bound<&[u8]>) -> bool {
    match upper {
        Bound::Unbounded => false,
        Bound::Included(high) => key > high,
        Bound::Excluded(high) => key >= high,
    }
}

impl BTree {
    /// Copies into `out` (cleared first) the entries of the leaf holding `start` that lie in
    /// `start..end`, in ascending order. Returns the key the next leaf's entries start at, or None
    /// when the range ends in this leaf. The leaf is latched only while it is copied.
    pub fn read_leaf(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        out: &mut Entries,
    ) -> Result<Option<Vec<u8>>> {
        out.clear();
        let seek = match start {
            Bound::Unbounded => Seek::First,
            Bound::Included(key) | Bound::Excluded(key) => Seek::AtOrAfter(key),
        };
        let leaf = self.descend_read(seek, AccessHint::Scan, true)?;
        let page = Page::new(&leaf.guard);
        let first = match start {
            Bound::Unbounded => 0,
            Bound::Included(key) => node::leaf_search(page, key).unwrap_or_else(|slot| slot),
            Bound::Excluded(key) => {
                node::leaf_search(page, key).map_or_else(|slot| slot, |slot| slot + 1)
            }
        };
        let count = page.slot_count();
        out.reserve(count - first.min(count), self.pool.page_size());
        // Most leaves of a long range lie wholly inside it: then no key but the last is compared.
        let all_inside = count > first && !above(node::leaf_key(page.record(count - 1)), end);
        for slot in first..count {
            let record = page.record(slot);
            if !all_inside && above(node::leaf_key(record), end) {
                return Ok(None);
            }
            out.push_record(self, record)?;
        }
        Ok(leaf.bounds.upper)
    }

    /// As [`BTree::read_leaf`] going down: the entries of the leaf holding the keys just below
    /// `end` that lie in `start..end`, in descending order; returns the key the previous leaf's
    /// entries end before, or None when the range ends in this leaf.
    fn read_leaf_rev(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        out: &mut Entries,
    ) -> Result<Option<Vec<u8>>> {
        out.clear();
        let seek = match end {
            Bound::Unbounded => Seek::Last,
            Bound::Included(key) => Seek::AtOrAfter(key),
            Bound::Excluded(key) => Seek::Before(key),
        };
        let leaf = self.descend_read(seek, AccessHint::Scan, true)?;
        let page = Page::new(&leaf.guard);
        let last = match end {
            Bound::Unbounded => page.slot_count(),
            Bound::Included(key) => {
                node::leaf_search(page, key).map_or_else(|slot| slot, |slot| slot + 1)
            }
            Bound::Excluded(key) => node::leaf_search(page, key).unwrap_or_else(|slot| slot),
        };
        for slot in (0..last).rev() {
            let record = page.record(slot);
            if below(node::leaf_key(record), start) {
                return Ok(None);
            }
            out.push_record(self, record)?;
        }
        Ok(leaf.bounds.lower)
    }
}

impl Iterator for RangeIter<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.position < self.buffer.len() {
                let entry = self.position;
                self.position += 1;
                let (key, value) = (self.buffer.key(entry), self.buffer.value(entry));
                return Some(Ok((key.to_vec(), value.to_vec())));
            }
            if self.done {
                return None;
            }
            if let Err(err) = self.fill() {
                self.done = true;
                return Some(Err(err));
            }
        }
    }
}
