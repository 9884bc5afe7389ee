//! Range scans, forward and backward.
//!
//! A scan holds one leaf at a time: it copies every entry of the leaf within its bounds into an
//! [`Entries`] buffer (keys and values side by side in one allocation, reused from leaf to leaf)
//! and releases the leaf. Scans therefore never latch sideways or hold a page while the caller
//! works, cannot deadlock with writers, and survive splits and merges between steps. Entries
//! changed while a scan runs may or may not be seen; entries that were in the range before the
//! scan began and were not touched are seen exactly once, in order.
//!
//! * **Walking the leaves** ([`LeafWalk`]). A scan remembers the level-1 branch page (the leaves'
//!   parent) it last came through, that page's LSN and the leaf's slot in it. The next leaf is the
//!   parent's next (or previous) child when the parent's LSN is unchanged — any split, merge or
//!   separator change of its children changes the parent and so its LSN — and its key range is
//!   the separators around it; otherwise, and at the parent's ends, the scan descends from the
//!   root again to the separator the last leaf ended at.
//! * **Logical read-ahead** (seed 003). On the parent, the scan reads the page numbers of the
//!   leaves ahead of it and hands them to the pool's read-ahead ([`BufferPool::read_ahead`]), which
//!   reads them in page order many at a time while the scan works. A scan that ends in its first
//!   leaf (a `LIMIT 10`) asks for nothing; the window then doubles per leaf up to
//!   [`MAX_READ_AHEAD`] leaves (bounded by a sixteenth of the pool), and is asked for in batches,
//!   when half of it has been used.
//! * **Keyed read-ahead** (multi-range read). A read of many sorted keys ([`BTree::get_many`])
//!   reads ahead the leaves its coming keys fall in, found on the parent by a branch search per
//!   key, in the same doubling window: the leaves of a sorted batch of primary keys arrive as one
//!   batch of reads in page order instead of one synchronous read each.
//! * Leaves are read with [`AccessHint::Scan`] so that a long scan does not push the hot set out of
//!   the buffer pool; read-ahead pages enter the pool the same way.

use std::ops::Bound;
use std::sync::Arc;

use super::io::IoMark;
use super::{node, BTree};
use crate::buffer_pool::{AccessHint, BufferPool, PageReadGuard, ScanAhead, ScanProgress};
use crate::page::Page;
use crate::{Lsn, PageNo, Result};

/// Most leaves a scan asks to be read ahead of it.
pub const MAX_READ_AHEAD: usize = 512;

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
#[derive(Debug, Default, Clone)]
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

/// Where a scan stands among the leaves, so that it steps to the next leaf through their parent
/// and reads ahead (see the module doc). A fresh walk starts with a descent.
#[derive(Debug, Default)]
pub struct LeafWalk {
    at: Option<WalkPosition>,
    ahead: ReadAheadWindow,
}

#[derive(Debug)]
struct WalkPosition {
    /// The leaves' parent the last leaf was reached through, and its LSN then.
    parent: PageNo,
    lsn: Lsn,
    /// The last leaf's slot in the parent.
    slot: usize,
    /// The key range the parent covers.
    parent_bounds: Bounds,
}

/// The leaves a walk has asked to be read ahead.
#[derive(Debug, Default)]
struct ReadAheadWindow {
    /// The parent whose children were asked for, and the farthest slot asked for in the walk's
    /// direction.
    parent: Option<PageNo>,
    until: usize,
    /// Leaves the walk has read, shared with the read-ahead thread.
    leaves: usize,
    progress: Arc<ScanProgress>,
}

impl ReadAheadWindow {
    /// The children of `parent` to ask for now that the walk reads the leaf at `slot`, in the
    /// order the walk will read them, and which of its leaves the first of them will be.
    fn advance(
        &mut self,
        parent: PageNo,
        page: Page<'_>,
        slot: usize,
        reverse: bool,
        max_depth: usize,
    ) -> (Vec<PageNo>, ScanAhead) {
        self.leaves += 1;
        self.progress.reach(self.leaves as u64);
        let pages = self.pages_to_ask(parent, page, slot, reverse, max_depth);
        let distance = match (pages.first(), reverse) {
            (None, _) => 0,
            (Some(_), false) => self.until + 1 - pages.len() - slot,
            (Some(_), true) => slot - (self.until + pages.len() - 1),
        };
        let ahead = ScanAhead {
            progress: Arc::clone(&self.progress),
            first: (self.leaves + distance) as u64,
        };
        (pages, ahead)
    }

    fn pages_to_ask(
        &mut self,
        parent: PageNo,
        page: Page<'_>,
        slot: usize,
        reverse: bool,
        max_depth: usize,
    ) -> Vec<PageNo> {
        if self.leaves < 2 || max_depth == 0 {
            return Vec::new();
        }
        let depth = window_depth(self.leaves as u64, max_depth) as usize;
        if self.parent != Some(parent) {
            self.parent = Some(parent);
            self.until = slot;
        }
        let child = |s: usize| node::branch_child(page.record(s));
        if reverse {
            let target = slot.saturating_sub(depth);
            if self.until + depth / 2 < slot || target >= self.until.min(slot) {
                return Vec::new();
            }
            let slots = target..self.until.min(slot);
            self.until = target;
            slots.rev().map(child).collect()
        } else {
            let target = (slot + depth).min(page.slot_count() - 1);
            if self.until > slot + depth / 2 || target <= self.until.max(slot) {
                return Vec::new();
            }
            let slots = self.until.max(slot) + 1..target + 1;
            self.until = target;
            slots.map(child).collect()
        }
    }
}

/// The leaves a read of sorted keys has asked to be read ahead (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct KeyedReadAhead {
    /// Leaves read so far (the current one included), shared with the read-ahead thread.
    leaves: u64,
    progress: Arc<ScanProgress>,
    /// The leaves asked for so far, counted in the order they will be read.
    asked_leaves: u64,
    /// Keys before this index have had their leaves asked for (or read).
    asked_keys: usize,
    /// The parent and slot of the last leaf asked for.
    last_asked: Option<(PageNo, usize)>,
}

impl KeyedReadAhead {
    /// The leaves to ask for now that the read is at the leaf in `slot` of `parent` (which covers
    /// keys below `parent_upper`), for the keys `keys[at]` on, where `keys[at]` is the first key
    /// of the current leaf.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn advance(
        &mut self,
        parent: PageNo,
        page: Page<'_>,
        slot: usize,
        parent_upper: Option<&[u8]>,
        keys: &[Vec<u8>],
        at: usize,
        max_depth: usize,
    ) -> (Vec<PageNo>, ScanAhead) {
        self.leaves += 1;
        self.progress.reach(self.leaves);
        self.asked_leaves = self.asked_leaves.max(self.leaves);
        self.asked_keys = self.asked_keys.max(at + 1);
        let ahead = |first: u64| ScanAhead {
            progress: Arc::clone(&self.progress),
            first,
        };
        let depth = window_depth(self.leaves, max_depth);
        if self.leaves < 2 || self.asked_leaves - self.leaves > depth / 2 {
            return (Vec::new(), ahead(0));
        }
        let first = self.asked_leaves + 1;
        let mut last_slot = match self.last_asked {
            Some((asked_parent, asked_slot)) if asked_parent == parent => asked_slot.max(slot),
            _ => slot,
        };
        let mut pages = Vec::new();
        while let Some(key) = keys.get(self.asked_keys) {
            if parent_upper.is_some_and(|upper| key.as_slice() >= upper) {
                break;
            }
            let child_slot = node::branch_search(page, key, false);
            if child_slot > last_slot {
                if pages.len() as u64 >= depth {
                    break;
                }
                pages.push(node::branch_child(page.record(child_slot)));
                last_slot = child_slot;
            }
            self.asked_keys += 1;
        }
        self.asked_leaves += pages.len() as u64;
        self.last_asked = Some((parent, last_slot));
        (pages, ahead(first))
    }
}

impl BTree {
    /// The leaf holding `keys[at]`, for a read of the sorted `keys` that asks for the leaves of
    /// the coming keys ahead.
    pub(crate) fn leaf_for_keys(
        &self,
        ahead: &mut KeyedReadAhead,
        keys: &[Vec<u8>],
        at: usize,
        hint: AccessHint,
    ) -> Result<Leaf<'_>> {
        let seek = Seek::AtOrAfter(&keys[at]);
        let (parent, parent_bounds) = match self.descend_to_parent(seek)? {
            Route::RootLeaf(leaf) => return Ok(leaf),
            Route::Parent { guard, bounds } => (guard, bounds),
        };
        let page = Page::new(&parent);
        let slot = seek.branch_slot(page);
        let leaf = self.child_leaf(page, &parent_bounds, slot, hint)?;
        let upper = parent_bounds.upper.as_deref();
        let max_depth = max_read_ahead(&self.pool);
        let (pages, scan) = ahead.advance(parent.page_no(), page, slot, upper, keys, at, max_depth);
        drop(parent);
        self.pool.read_ahead(&self.space, pages, Some(scan));
        Ok(leaf)
    }

    /// The leaf in `slot` of a latched parent covering `parent_bounds`, read-latched with its key
    /// range.
    fn child_leaf(
        &self,
        parent: Page<'_>,
        parent_bounds: &Bounds,
        slot: usize,
        hint: AccessHint,
    ) -> Result<Leaf<'_>> {
        let mut bounds = parent_bounds.clone();
        bounds.narrow(parent, slot);
        let child = node::branch_child(parent.record(slot));
        let guard = self.fetch_checked(child, Some(0), hint)?;
        Ok(Leaf { guard, bounds })
    }
}

/// The first page a scan's descent reaches that it steps through: the leaves' parent, or the
/// root when the tree is one leaf.
enum Route<'t> {
    Parent {
        guard: PageReadGuard<'t>,
        bounds: Bounds,
    },
    RootLeaf(Leaf<'t>),
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

    #[inline]
    pub fn key(&self, entry: usize) -> &[u8] {
        let [key, value, _] = self.spans[entry];
        &self.bytes[key as usize..value as usize]
    }

    #[inline]
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
    walk: LeafWalk,
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

impl BTree {
    /// Lends `visit` each entry with a key in `start..end`, in ascending order, with its leaf
    /// latched (nothing copied or allocated per entry, as [`BTree::range`] does), until the range
    /// ends or `visit` returns false. A leaf whose tag (see [`BTree::tag_leaf`]) is not 0 and
    /// `passes_leaf` accepts is passed over whole. `visit` must not use this tree.
    pub fn for_each_in_range<E: From<crate::StorageError>>(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        passes_leaf: impl Fn(u64) -> bool,
        mut visit: impl FnMut(&[u8], &[u8]) -> std::result::Result<bool, E>,
    ) -> std::result::Result<(), E> {
        let mut walk = LeafWalk::default();
        let mut from = start.map(<[u8]>::to_vec);
        loop {
            let bound = from.as_ref().map(Vec::as_slice);
            match self.visit_leaf(&mut walk, bound, end, &passes_leaf, &mut visit)? {
                LeafVisit::Next(Some(key)) => from = Bound::Included(key),
                LeafVisit::Next(None) | LeafVisit::Stopped => return Ok(()),
            }
        }
    }

    /// Lends `visit` the entries in `start..end` of the leaf holding `start`, with the leaf
    /// latched, unless `passes_leaf` accepts the leaf's tag; what [`BTree::read_leaf`] copies.
    fn visit_leaf<E: From<crate::StorageError>>(
        &self,
        walk: &mut LeafWalk,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        passes_leaf: &impl Fn(u64) -> bool,
        visit: &mut impl FnMut(&[u8], &[u8]) -> std::result::Result<bool, E>,
    ) -> std::result::Result<LeafVisit, E> {
        let seek = match start {
            Bound::Unbounded => Seek::First,
            Bound::Included(key) | Bound::Excluded(key) => Seek::AtOrAfter(key),
        };
        let leaf = self.walk_to_leaf(walk, seek, false)?;
        let page = Page::new(&leaf.guard);
        let count = page.slot_count();
        // Most leaves of a long range lie wholly inside it: then no key but the last is compared.
        let all_inside = count > 0 && !above(node::leaf_key(page.record(count - 1)), end);
        let tag = page.leaf_tag();
        if count > 0 && tag != 0 && passes_leaf(tag) {
            let next = if all_inside { leaf.bounds.upper } else { None };
            return Ok(LeafVisit::Next(next));
        }
        let first = match start {
            Bound::Unbounded => 0,
            Bound::Included(key) => node::leaf_search(page, key).unwrap_or_else(|slot| slot),
            Bound::Excluded(key) => {
                node::leaf_search(page, key).map_or_else(|slot| slot, |slot| slot + 1)
            }
        };
        for slot in first..count {
            let record = page.record(slot);
            let key = node::leaf_key(record);
            if !all_inside && above(key, end) {
                return Ok(LeafVisit::Next(None));
            }
            let go_on = match node::leaf_value(record) {
                node::StoredValue::Inline(value) => visit(key, value)?,
                node::StoredValue::Overflow { .. } => visit(key, &self.load_value(record)?)?,
            };
            if !go_on {
                return Ok(LeafVisit::Stopped);
            }
        }
        Ok(LeafVisit::Next(leaf.bounds.upper))
    }
}

/// How [`BTree::visit_leaf`] left a leaf: the key the next leaf's entries start at (None: the
/// range ended), or stopped by its visitor.
enum LeafVisit {
    Next(Option<Vec<u8>>),
    Stopped,
}

impl<'t> RangeIter<'t> {
    fn new(tree: &'t BTree, start: Bound<&[u8]>, end: Bound<&[u8]>, reverse: bool) -> Self {
        RangeIter {
            tree,
            lower: start.map(<[u8]>::to_vec),
            upper: end.map(<[u8]>::to_vec),
            reverse,
            walk: LeafWalk::default(),
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
        let (walk, buffer) = (&mut self.walk, &mut self.buffer);
        if self.reverse {
            match self.tree.read_leaf_rev(walk, lower, upper, buffer)? {
                Some(next) => self.upper = Bound::Excluded(next),
                None => self.done = true,
            }
        } else {
            match self.tree.read_leaf(walk, lower, upper, buffer)? {
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
    /// when the range ends in this leaf. The leaf is latched only while it is copied. A scan
    /// passes the same `walk` and, as `start`, the key the previous call returned.
    pub fn read_leaf(
        &self,
        walk: &mut LeafWalk,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        out: &mut Entries,
    ) -> Result<Option<Vec<u8>>> {
        out.clear();
        out.reserve(0, self.pool.page_size());
        let copy = &mut |key: &[u8], value: &[u8]| {
            out.push(key, value);
            Ok::<_, crate::StorageError>(true)
        };
        match self.visit_leaf(walk, start, end, &|_| false, copy)? {
            LeafVisit::Next(next) => Ok(next),
            LeafVisit::Stopped => Ok(None),
        }
    }

    /// As [`BTree::read_leaf`] going down: the entries of the leaf holding the keys just below
    /// `end` that lie in `start..end`, in descending order; returns the key the previous leaf's
    /// entries end before, or None when the range ends in this leaf.
    fn read_leaf_rev(
        &self,
        walk: &mut LeafWalk,
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
        let leaf = self.walk_to_leaf(walk, seek, true)?;
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

impl BTree {
    /// The leaf `seek` selects for a scan walking in `reverse` or forward: a step through the
    /// parent from the walk's position when it still holds, else a descent; asks for the leaves
    /// ahead to be read (see the module doc).
    fn walk_to_leaf(&self, walk: &mut LeafWalk, seek: Seek<'_>, reverse: bool) -> Result<Leaf<'_>> {
        let stepped = walk.at.take().and_then(|at| self.step(at, seek));
        let (parent, parent_bounds, slot) = match stepped {
            Some(step) => step,
            None => match self.descend_to_parent(seek)? {
                Route::RootLeaf(leaf) => return Ok(leaf),
                Route::Parent { guard, bounds } => {
                    let slot = seek.branch_slot(Page::new(&guard));
                    (guard, bounds, slot)
                }
            },
        };
        let page = Page::new(&parent);
        let leaf = self.child_leaf(page, &parent_bounds, slot, AccessHint::Scan)?;
        let max_depth = max_read_ahead(&self.pool);
        let (ahead, scan) = walk
            .ahead
            .advance(parent.page_no(), page, slot, reverse, max_depth);
        walk.at = Some(WalkPosition {
            parent: parent.page_no(),
            lsn: page.lsn(),
            slot,
            parent_bounds,
        });
        drop(parent);
        self.pool.read_ahead(&self.space, ahead, Some(scan));
        Ok(leaf)
    }

    /// The parent and slot of the leaf `seek` selects, if it is the neighbour of the walk's last
    /// leaf and the parent has not changed since.
    fn step(&self, at: WalkPosition, seek: Seek<'_>) -> Option<(PageReadGuard<'_>, Bounds, usize)> {
        // The page may have been freed (even cut off the file) since: then its LSN differs or
        // it cannot be read, and the walk descends instead.
        let mark = IoMark::now();
        let guard = self
            .pool
            .fetch_read(&self.space, at.parent, AccessHint::Normal)
            .ok()?;
        let page = Page::new(&guard);
        self.io.count_since(mark, page.level());
        if page.lsn() != at.lsn {
            return None;
        }
        let separator = |slot: usize| node::branch_key(page.record(slot));
        let slot = match seek {
            Seek::AtOrAfter(key) => {
                Some(at.slot + 1).filter(|&next| next < page.slot_count() && separator(next) == key)
            }
            Seek::Before(key) => (at.slot > 0 && separator(at.slot) == key).then(|| at.slot - 1),
            Seek::First | Seek::Last => None,
        }?;
        Some((guard, at.parent_bounds, slot))
    }

    /// Read-couples down to the leaves' parent on the way to the leaf `seek` selects.
    fn descend_to_parent(&self, seek: Seek<'_>) -> Result<Route<'_>> {
        let mut guard = self.fetch_checked(self.entry.root, None, AccessHint::Normal)?;
        let mut bounds = Bounds::default();
        loop {
            let page = Page::new(&guard);
            let level = page.level();
            match level {
                0 => return Ok(Route::RootLeaf(Leaf { guard, bounds })),
                1 => return Ok(Route::Parent { guard, bounds }),
                _ => {}
            }
            let slot = seek.branch_slot(page);
            bounds.narrow(page, slot);
            let child = node::branch_child(page.record(slot));
            guard = self.fetch_checked(child, Some(level - 1), AccessHint::Normal)?;
        }
    }
}

/// How many leaves a walk that has read `leaves` asks to have ahead of it: 16 at its second leaf,
/// doubling per leaf up to `max_depth`.
fn window_depth(leaves: u64, max_depth: usize) -> u64 {
    (4u64 << leaves.min(16)).min(max_depth as u64)
}

/// The deepest read-ahead window for scans of `pool`: a sixteenth of its frames, at most
/// [`MAX_READ_AHEAD`].
fn max_read_ahead(pool: &BufferPool) -> usize {
    (pool.frame_count() / 16).min(MAX_READ_AHEAD)
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
