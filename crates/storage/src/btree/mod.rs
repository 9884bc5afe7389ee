//! B+trees: byte-string keys in memcmp order mapped to values of up to [`MAX_VALUE_LEN`] bytes.
//!
//! ```text
//!                      root (fixed page, level 2)
//!                 /              |               \
//!         branch (level 1)   branch            branch          records: child | key
//!          /    |    \
//!      leaf <-> leaf <-> leaf <-> ...                          records: key | value or overflow ref
//! ```
//!
//! * **Pages.** Leaves hold the records (formats in [`node`]); values that would make a record too
//!   large live in overflow chains ([`overflow`]). Leaves are linked both ways; branch pages are not.
//!   A tree's leaves and overflow pages come from its leaf segment, its branch pages from its branch
//!   segment, so the leaves fill extents of their own (seed 003).
//! * **Fixed root.** The root page never moves: when it splits, its halves move to two new pages and
//!   it becomes their parent; when it is left with one child, that child's records move up into it.
//!   So the space header names the root once and never changes.
//! * **Concurrency without a tree-wide lock.** Every latch is taken top-down with latch coupling (a
//!   child is latched before its parent is released), and siblings are latched only while their
//!   parent is write-latched, left to right across parents. Readers hold at most two pages at once.
//!   A writer first descends with read latches and write-latches only the leaf (the common case);
//!   if the change would split or underfill the leaf, it starts again from the root with write
//!   latches, releasing every ancestor above a child that cannot split (or underflow). Scans hold one
//!   leaf at a time and find the next leaf by a fresh descent from the bound they reached, so they
//!   never latch sideways.
//! * **Atomicity.** One change (with its splits, merges and allocations) is one mini-transaction;
//!   so is a run of inserts into one leaf ([`BTree::insert_run_if_absent`], bulk loads) and of
//!   deletes from one leaf ([`BTree::delete_sorted`]).
//!   Pages are allocated and freed only after every tree page the change needs is latched (the latch
//!   order of [`crate::mtr`]), and structural changes are planned before any page is modified.
//! * **Balance.** Any full page plus one record splits into two pages that fit (records are at most a
//!   third of a page). A non-root page below a quarter full merges with a sibling when both fit in one
//!   page; otherwise it stays as it is.

mod bulk;
mod cursor;
mod io;
mod merge;
mod node;
mod overflow;
mod partition;
mod runs;
mod verify;

use std::sync::Arc;

use crate::buffer_pool::{AccessHint, BufferPool, PageReadGuard, PageWriteGuard};
use crate::mtr::{Mtr, PageHandle};
use crate::page::{Page, PageMut, PageType, NO_PAGE};
use crate::space::{SegmentId, Space, TreeEntry};
use crate::{PageNo, Result, StorageError};

pub use bulk::{discard_unfinished_builds, BuildProgress};
pub use cursor::{Entries, LeafWalk, RangeIter, MAX_READ_AHEAD};
pub use io::{TreeIo, TreeIoCounts};
pub use partition::Partition;
pub use runs::{RunChoice, RunRewritten};
pub use verify::{TreeStats, Verified};

use io::IoMark;
use node::{Limits, StoredValue};

/// The largest value a tree stores.
pub const MAX_VALUE_LEN: usize = 65536;

/// One B+tree of a space.
pub struct BTree {
    pool: Arc<BufferPool>,
    space: Arc<Space>,
    entry: TreeEntry,
    limits: Limits,
    io: TreeIo,
}

/// A page of the write path: its handle and its position in its parent (0 for the top of a path).
#[derive(Debug, Clone, Copy)]
struct Step {
    handle: PageHandle,
    position: usize,
}

/// A split decided before any page is modified: `page` keeps `left`, the new page `right_page`
/// receives `right`, and `separator` (the smallest key of the right side) goes to the parent.
struct Split {
    depth: usize,
    left: Vec<Vec<u8>>,
    right: Vec<Vec<u8>>,
    right_page: PageNo,
    separator: Vec<u8>,
}

/// Where a page's new separator record goes once the splits below it are done.
enum Top {
    /// Into the page at this depth of the path, at this slot.
    Insert {
        depth: usize,
        slot: usize,
        record: Vec<u8>,
    },
    /// The root split: its two halves move to `left_page` and the split's `right_page`.
    GrowRoot { left_page: PageNo },
}

impl BTree {
    /// Creates an empty tree in `space` (the root starts as an empty leaf).
    pub fn create(pool: Arc<BufferPool>, space: Arc<Space>, index_id: u64) -> Result<BTree> {
        ensure_absent(&space, index_id)?;
        let mut mtr = Mtr::new(&pool)?;
        let leaf_segment = space.create_segment(&mut mtr)?;
        let branch_segment = space.create_segment(&mut mtr)?;
        let root = space.allocate_page(&mut mtr, branch_segment)?;
        let handle = mtr.create(&space, root)?;
        mtr.edit(handle)
            .format(PageType::Leaf, space.id(), root, index_id, 0);
        let entry = TreeEntry {
            index_id,
            root,
            leaf_segment,
            branch_segment,
        };
        space.register_tree(&mut mtr, entry)?;
        mtr.commit();
        Ok(Self::with_entry(pool, space, entry))
    }

    /// Opens the tree `index_id` listed in the header of `space`.
    pub fn open(pool: Arc<BufferPool>, space: Arc<Space>, index_id: u64) -> Result<BTree> {
        let entry = space
            .trees()
            .into_iter()
            .find(|t| t.index_id == index_id)
            .ok_or_else(|| {
                StorageError::Format(format!("no index {index_id} in space {}", space.id()))
            })?;
        if entry.root == NO_PAGE {
            return Err(StorageError::Format(format!(
                "index {index_id} of space {} was never finished building",
                space.id()
            )));
        }
        Ok(Self::with_entry(pool, space, entry))
    }

    fn with_entry(pool: Arc<BufferPool>, space: Arc<Space>, entry: TreeEntry) -> BTree {
        let limits = Limits::new(space.page_size());
        BTree {
            pool,
            space,
            entry,
            limits,
            io: TreeIo::default(),
        }
    }

    /// The page requests made through this tree ([`io`]).
    pub fn io(&self) -> TreeIoCounts {
        self.io.counts()
    }

    pub fn index_id(&self) -> u64 {
        self.entry.index_id
    }

    pub fn root(&self) -> PageNo {
        self.entry.root
    }

    pub fn space(&self) -> &Arc<Space> {
        &self.space
    }

    /// The longest key this tree accepts (it depends on the page size).
    pub fn max_key_len(&self) -> usize {
        self.limits.max_key
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let leaf = self.descend_read(cursor::Seek::AtOrAfter(key))?;
        let page = Page::new(&leaf);
        match node::leaf_search(page, key) {
            Ok(slot) => Ok(Some(self.load_value(page.record(slot))?)),
            Err(_) => Ok(None),
        }
    }

    /// Stores `value` under `key`, returning the value it replaces.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.put(key, value, true)
    }

    /// Stores `value` under `key` unless the key is present (checked and written under one latch
    /// of the leaf); false, with nothing changed, if it is.
    pub fn insert_if_absent(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        Ok(self.put(key, value, false)?.is_none())
    }

    /// Stores `value` under `key` (replacing a present value only if `replace`); returns the value
    /// that was present.
    fn put(&self, key: &[u8], value: &[u8], replace: bool) -> Result<Option<Vec<u8>>> {
        self.check_sizes(key, value)?;
        if let Some(present) = self.insert_in_leaf(key, value, replace)? {
            return Ok(present);
        }
        self.insert_with_splits(key, value, replace)
    }

    /// Sets the tag of the leaf holding `key` (see the page module) to the largest of its
    /// entries' tags when `entry_tag` gives every entry one, and clears it otherwise. Entries are
    /// asked last to first, so a leaf whose entries get their tags in key order is decided at its
    /// last entry until the last one gets its tag.
    pub fn tag_leaf(
        &self,
        key: &[u8],
        entry_tag: impl Fn(&[u8], &[u8]) -> Option<u64>,
    ) -> Result<()> {
        let mut mtr = Mtr::new(&self.pool)?;
        let leaf = self.latch_leaf(&mut mtr, key)?;
        let page = Page::new(mtr.page(leaf));
        let tag = leaf_tag_of(page, entry_tag);
        if tag != page.leaf_tag() {
            mtr.edit(leaf).set_leaf_tag(tag);
        }
        mtr.commit();
        Ok(())
    }

    /// Removes `key`, returning the value it had. A page left under a quarter full merges with a
    /// sibling if both fit in one ([`Limits::merge_threshold`]).
    pub fn delete(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.delete_merging_below(key, self.limits.merge_threshold, &|_| true)
    }

    /// Removes `key` as [`BTree::delete`] does, but only if `accept` takes its present value,
    /// asked with the leaf latched: no one changes the entry between the look and the removal.
    /// Returns the value removed (None when the key is absent or `accept` refused it).
    pub fn delete_if(&self, key: &[u8], accept: impl Fn(&[u8]) -> bool) -> Result<Option<Vec<u8>>> {
        self.delete_merging_below(key, self.limits.merge_threshold, &accept)
    }

    /// Removes `key` as [`BTree::delete`] does, but a page left under half full already merges
    /// with a sibling if both fit in one (InnoDB's MERGE_THRESHOLD). For purge, which removes
    /// entries of a secondary index that an old snapshot kept: the leaves they filled split while
    /// it was held, and at a quarter they would stay half empty after it (sysbench
    /// oltp_update_index behind a 60 s snapshot: the index on k 2.1x its pages, for good). A
    /// foreground delete keeps the quarter, so few of its deletes take the path that latches
    /// more than the leaf.
    pub fn delete_compacting(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.delete_merging_below(key, self.limits.usable / 2, &|_| true)
    }

    fn delete_merging_below(
        &self,
        key: &[u8],
        threshold: usize,
        accept: &dyn Fn(&[u8]) -> bool,
    ) -> Result<Option<Vec<u8>>> {
        if key.len() > self.limits.max_key {
            return Ok(None);
        }
        if let Some(removed) = self.delete_in_leaf(key, threshold, accept)? {
            return Ok(removed);
        }
        self.delete_with_merges(key, threshold, accept)
    }

    /// Removes the records at `slots` (ascending) of the leaf that ends `path`, frees their
    /// overflow chains, merges what the removal left underfull, and commits; nothing is done (and
    /// nothing logged) when `slots` is empty.
    fn remove_from_leaf(&self, mut mtr: Mtr<'_>, path: &[Step], slots: &[usize]) -> Result<()> {
        if slots.is_empty() {
            return Ok(());
        }
        let leaf = path.last().expect("a path ends at a leaf").handle;
        let mut freed = Vec::new();
        for &slot in slots {
            let page = Page::new(mtr.page(leaf));
            freed.extend(self.load_value_and_chain(page.record(slot))?.1);
        }
        let mut edit = mtr.edit(leaf);
        for &slot in slots.iter().rev() {
            edit.remove(slot);
        }
        freed.extend(self.rebalance(&mut mtr, path, self.limits.merge_threshold)?);
        for page_no in freed {
            self.space.free_page(&mut mtr, page_no)?;
        }
        mtr.commit();
        Ok(())
    }

    fn check_sizes(&self, key: &[u8], value: &[u8]) -> Result<()> {
        if key.len() > self.limits.max_key {
            return Err(StorageError::KeyTooLarge {
                len: key.len(),
                max: self.limits.max_key,
            });
        }
        if value.len() > MAX_VALUE_LEN {
            return Err(StorageError::ValueTooLarge {
                len: value.len(),
                max: MAX_VALUE_LEN,
            });
        }
        Ok(())
    }

    /// The value of a leaf record, reading its overflow chain if it has one.
    fn load_value(&self, record: &[u8]) -> Result<Vec<u8>> {
        Ok(self.load_value_and_chain(record)?.0)
    }

    fn load_value_and_chain(&self, record: &[u8]) -> Result<(Vec<u8>, Vec<PageNo>)> {
        match node::leaf_value(record) {
            StoredValue::Inline(bytes) => Ok((bytes.to_vec(), Vec::new())),
            StoredValue::Overflow { len, first } => {
                let mark = IoMark::now();
                let chain =
                    overflow::read_chain(&self.pool, &self.space, self.entry.index_id, first, len);
                self.io.count_since(mark, 0);
                chain
            }
        }
    }

    /// Builds the leaf record for `key` and `value`, writing an overflow chain if the value does not
    /// stay inline. Allocates: call only once every tree page the change needs is latched.
    fn make_record(&self, mtr: &mut Mtr<'_>, key: &[u8], value: &[u8]) -> Result<Vec<u8>> {
        if self.limits.is_inline(key.len(), value.len()) {
            return Ok(node::encode_leaf(key, StoredValue::Inline(value)));
        }
        let first = overflow::write_chain(
            mtr,
            &self.space,
            self.entry.leaf_segment,
            self.entry.index_id,
            value,
        )?;
        Ok(node::encode_leaf(
            key,
            StoredValue::Overflow {
                len: value.len() as u32,
                first,
            },
        ))
    }

    /// Checks that a page reached from a parent (or as the root) is a tree page of this index at the
    /// expected level.
    fn check_page(&self, bytes: &[u8], page_no: PageNo, level: Option<u16>) -> Result<()> {
        let page = Page::new(bytes);
        let expected_type = match page.level() {
            0 => PageType::Leaf,
            _ => PageType::Branch,
        };
        if page.page_type() != expected_type
            || page.index_id() != self.entry.index_id
            || level.is_some_and(|l| l != page.level())
        {
            return Err(StorageError::corrupt(
                self.space.id(),
                page_no,
                format!(
                    "expected a page of index {} at level {level:?}, found {:?} of index {} at level {}",
                    self.entry.index_id,
                    page.page_type(),
                    page.index_id(),
                    page.level()
                ),
            ));
        }
        Ok(())
    }

    fn fetch_checked(
        &self,
        page_no: PageNo,
        level: Option<u16>,
        hint: AccessHint,
    ) -> Result<PageReadGuard<'_>> {
        let mark = IoMark::now();
        let guard = self.pool.fetch_read(&self.space, page_no, hint)?;
        self.check_page(&guard, page_no, level)?;
        self.io.count_since(mark, Page::new(&guard).level());
        Ok(guard)
    }

    /// Write-latches `page_no` of this tree in `mtr` (see [`Mtr::latch`]) and checks that it is
    /// a page of this tree at `level` (any level for `None`).
    fn latch_checked(
        &self,
        mtr: &mut Mtr<'_>,
        page_no: PageNo,
        level: Option<u16>,
    ) -> Result<PageHandle> {
        let mark = IoMark::now();
        let handle = mtr.latch(&self.space, page_no)?;
        self.check_page(mtr.page(handle), page_no, level)?;
        self.io
            .count_since(mark, Page::new(mtr.page(handle)).level());
        Ok(handle)
    }

    /// Write-latches a leaf outside a mini-transaction (it is adopted by one after its check).
    fn fetch_leaf_write(&self, page_no: PageNo) -> Result<PageWriteGuard<'_>> {
        let mark = IoMark::now();
        let leaf = self.pool.fetch_write(&self.space, page_no)?;
        self.io.count_since(mark, Page::new(&leaf).level());
        Ok(leaf)
    }

    /// Read-couples down to the leaf `seek` selects (point reads; scans walk the leaves with
    /// [`cursor::LeafWalk`]).
    fn descend_read(&self, seek: cursor::Seek<'_>) -> Result<PageReadGuard<'_>> {
        let mut guard = self.fetch_checked(self.entry.root, None, AccessHint::Normal)?;
        loop {
            let page = Page::new(&guard);
            let level = page.level();
            if level == 0 {
                return Ok(guard);
            }
            let child = node::branch_child(page.record(seek.branch_slot(page)));
            guard = self.fetch_checked(child, Some(level - 1), AccessHint::Normal)?;
        }
    }

    /// Read-couples down to the leaf for `key` and write-latches only that leaf, in `mtr`. A root
    /// that is a leaf is write-latched directly; if it has grown (or shrunk) meanwhile, start over.
    fn latch_leaf<'a>(&'a self, mtr: &mut Mtr<'a>, key: &[u8]) -> Result<PageHandle> {
        let root = self.entry.root;
        loop {
            let mut guard = self.fetch_checked(root, None, AccessHint::Normal)?;
            if Page::new(&guard).level() == 0 {
                drop(guard);
                let leaf = self.fetch_leaf_write(root)?;
                self.check_page(&leaf, root, None)?;
                if Page::new(&leaf).level() == 0 {
                    return Ok(mtr.adopt(leaf));
                }
                continue;
            }
            loop {
                let page = Page::new(&guard);
                let level = page.level();
                let child = node::branch_child(page.record(node::branch_search(page, key, false)));
                if level == 1 {
                    let leaf = self.fetch_leaf_write(child)?;
                    self.check_page(&leaf, child, Some(0))?;
                    drop(guard);
                    return Ok(mtr.adopt(leaf));
                }
                guard = self.fetch_checked(child, Some(level - 1), AccessHint::Normal)?;
            }
        }
    }

    /// Write-latches the path from the root to the leaf for `key`, releasing every ancestor above a
    /// child that `safe` says will absorb the change without passing it up.
    fn latch_path<'a>(
        &'a self,
        mtr: &mut Mtr<'a>,
        key: &[u8],
        safe: impl Fn(Page<'_>) -> bool,
    ) -> Result<Vec<Step>> {
        let root = self.latch_checked(mtr, self.entry.root, None)?;
        let mut path = vec![Step {
            handle: root,
            position: 0,
        }];
        loop {
            let top = path.last().expect("the path holds the root").handle;
            let page = Page::new(mtr.page(top));
            let level = page.level();
            if level == 0 {
                return Ok(path);
            }
            let position = node::branch_search(page, key, false);
            let child_no = node::branch_child(page.record(position));
            let child = self.latch_checked(mtr, child_no, Some(level - 1))?;
            if safe(Page::new(mtr.page(child))) {
                for step in path.drain(..) {
                    mtr.release(step.handle);
                }
            }
            path.push(Step {
                handle: child,
                position,
            });
        }
    }

    /// The common insert: only the leaf changes. `None` if the record does not fit (nothing done).
    /// A present key is left as it is unless `replace`.
    fn insert_in_leaf(
        &self,
        key: &[u8],
        value: &[u8],
        replace: bool,
    ) -> Result<Option<Option<Vec<u8>>>> {
        let mut mtr = Mtr::new(&self.pool)?;
        let leaf = self.latch_leaf(&mut mtr, key)?;
        let needed = Page::record_footprint(self.limits.leaf_record_len(key.len(), value.len()));
        let page = Page::new(mtr.page(leaf));
        let found = node::leaf_search(page, key);
        if let (Ok(slot), false) = (found, replace) {
            return Ok(Some(Some(self.load_value(page.record(slot))?)));
        }
        let room = page.free_space()
            + found.map_or(0, |slot| Page::record_footprint(page.record(slot).len()));
        if room < needed {
            return Ok(None);
        }
        let old = match found {
            Ok(slot) => Some(self.load_value_and_chain(page.record(slot))?),
            Err(_) => None,
        };
        self.put_in_leaf(&mut mtr, leaf, found, key, value)?;
        Ok(Some(self.finish_replace(mtr, old)?))
    }

    /// Writes the record for `key` into a latched leaf where `found` says, its room checked.
    fn put_in_leaf(
        &self,
        mtr: &mut Mtr<'_>,
        leaf: PageHandle,
        found: std::result::Result<usize, usize>,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let record = self.make_record(mtr, key, value)?;
        let mut page = mtr.edit(leaf);
        match found {
            Ok(slot) => page.replace(slot, &record),
            Err(slot) => page.insert(slot, &record),
        }
        .expect("room was checked with the leaf latched");
        Ok(())
    }

    /// Frees the replaced value's chain, commits, and returns the replaced value.
    fn finish_replace(
        &self,
        mut mtr: Mtr<'_>,
        old: Option<(Vec<u8>, Vec<PageNo>)>,
    ) -> Result<Option<Vec<u8>>> {
        if let Some((_, chain)) = &old {
            overflow::free_chain(&mut mtr, &self.space, chain)?;
        }
        mtr.commit();
        Ok(old.map(|(value, _)| value))
    }

    /// An insert that may split pages up to the root (a present key is left as it is unless
    /// `replace`).
    fn insert_with_splits(
        &self,
        key: &[u8],
        value: &[u8],
        replace: bool,
    ) -> Result<Option<Vec<u8>>> {
        let mut mtr = Mtr::new(&self.pool)?;
        let needed = Page::record_footprint(self.limits.leaf_record_len(key.len(), value.len()));
        let max_separator = Page::record_footprint(self.limits.max_record);
        let path = self.latch_path(&mut mtr, key, |page| {
            let needs = if page.level() == 0 {
                needed
            } else {
                max_separator
            };
            page.free_space() >= needs
        })?;
        let leaf = path.last().expect("a path ends at a leaf").handle;
        let page = Page::new(mtr.page(leaf));
        let found = node::leaf_search(page, key);
        if let (Ok(slot), false) = (found, replace) {
            return Ok(Some(self.load_value(page.record(slot))?));
        }
        let room = page.free_space()
            + found.map_or(0, |slot| Page::record_footprint(page.record(slot).len()));
        let old = match found {
            Ok(slot) => Some(self.load_value_and_chain(page.record(slot))?),
            Err(_) => None,
        };
        if room >= needed {
            self.put_in_leaf(&mut mtr, leaf, found, key, value)?;
            return self.finish_replace(mtr, old);
        }
        let right_sibling = match Page::new(mtr.page(leaf)).next() {
            NO_PAGE => None,
            next => Some(self.latch_checked(&mut mtr, next, Some(0))?),
        };
        let record = self.make_record(&mut mtr, key, value)?;
        let mut records: Vec<Vec<u8>> = Page::new(mtr.page(leaf))
            .records()
            .map(<[u8]>::to_vec)
            .collect();
        let appending = match found {
            Ok(slot) => {
                records[slot] = record;
                false
            }
            Err(slot) => {
                records.insert(slot, record);
                slot == records.len() - 1
            }
        };
        let (splits, top) = self.plan_splits(&mut mtr, &path, records, appending)?;
        self.apply_splits(&mut mtr, &path, splits, top, right_sibling)?;
        self.finish_replace(mtr, old)
    }

    /// Decides the splits an overfull leaf causes, bottom up, allocating their new pages.
    fn plan_splits(
        &self,
        mtr: &mut Mtr<'_>,
        path: &[Step],
        mut records: Vec<Vec<u8>>,
        appending: bool,
    ) -> Result<(Vec<Split>, Top)> {
        let mut splits = Vec::new();
        let mut depth = path.len() - 1;
        loop {
            let is_leaf = depth == path.len() - 1;
            let at = split_point(&records, is_leaf && appending);
            let mut right = records.split_off(at);
            let separator = if is_leaf {
                node::shortest_separator(
                    node::leaf_key(records.last().expect("left half is not empty")),
                    node::leaf_key(&right[0]),
                )
            } else {
                let separator = node::branch_key(&right[0]).to_vec();
                right[0] = node::encode_branch(b"", node::branch_child(&right[0]));
                separator
            };
            let segment = self.segment_for(is_leaf);
            let right_page = self.space.allocate_page(mtr, segment)?;
            let separator_record = node::encode_branch(&separator, right_page);
            let split = Split {
                depth,
                left: records,
                right,
                right_page,
                separator,
            };
            splits.push(split);
            if depth == 0 {
                debug_assert_eq!(
                    mtr.page_no(path[0].handle),
                    self.entry.root,
                    "only the root splits without its parent latched"
                );
                let left_page = self.space.allocate_page(mtr, segment)?;
                return Ok((splits, Top::GrowRoot { left_page }));
            }
            let parent = Page::new(mtr.page(path[depth - 1].handle));
            let slot = path[depth].position + 1;
            if parent.free_space() >= Page::record_footprint(separator_record.len()) {
                let top = Top::Insert {
                    depth: depth - 1,
                    slot,
                    record: separator_record,
                };
                return Ok((splits, top));
            }
            records = parent.records().map(<[u8]>::to_vec).collect();
            records.insert(slot, separator_record);
            depth -= 1;
        }
    }

    fn segment_for(&self, leaf: bool) -> SegmentId {
        if leaf {
            self.entry.leaf_segment
        } else {
            self.entry.branch_segment
        }
    }

    /// Carries out planned splits. The root keeps its page: when it splits, both halves move to new
    /// pages and it becomes their parent, one level up.
    fn apply_splits(
        &self,
        mtr: &mut Mtr<'_>,
        path: &[Step],
        splits: Vec<Split>,
        top: Top,
        right_sibling: Option<PageHandle>,
    ) -> Result<()> {
        let space_id = self.space.id();
        let index_id = self.entry.index_id;
        for split in splits {
            let handle = path[split.depth].handle;
            let old = Page::new(mtr.page(handle));
            let (level, old_next) = (old.level(), old.next());
            let page_type = old.page_type();
            let grows_root = split.depth == 0 && matches!(top, Top::GrowRoot { .. });
            let left_handle = match &top {
                Top::GrowRoot { left_page } if grows_root => {
                    let left = mtr.create(&self.space, *left_page)?;
                    mtr.edit(left)
                        .format(page_type, space_id, *left_page, index_id, level);
                    left
                }
                _ => handle,
            };
            let left_no = mtr.page_no(left_handle);
            let right = mtr.create(&self.space, split.right_page)?;
            let mut right_page = mtr.edit(right);
            right_page.format(page_type, space_id, split.right_page, index_id, level);
            fill(&mut right_page, &split.right);
            if level == 0 {
                right_page.set_prev(left_no);
                right_page.set_next(old_next);
            }
            let mut left_page = mtr.edit(left_handle);
            let kept = common_prefix(left_page.view(), &split.left);
            left_page.truncate(kept);
            fill(&mut left_page, &split.left[kept..]);
            if level == 0 {
                left_page.set_next(split.right_page);
                if let Some(sibling) = right_sibling {
                    mtr.edit(sibling).set_prev(split.right_page);
                }
            }
            if grows_root {
                let mut root = mtr.edit(handle);
                root.format(
                    PageType::Branch,
                    space_id,
                    self.entry.root,
                    index_id,
                    level + 1,
                );
                fill(
                    &mut root,
                    &[
                        node::encode_branch(b"", left_no),
                        node::encode_branch(&split.separator, split.right_page),
                    ],
                );
            }
        }
        if let Top::Insert {
            depth,
            slot,
            record,
        } = top
        {
            mtr.edit(path[depth].handle)
                .insert(slot, &record)
                .expect("the separator's room was checked with the page latched");
        }
        Ok(())
    }

    /// The common delete: only the leaf changes. `None` if the leaf would be left with fewer than
    /// `threshold` bytes (nothing done).
    fn delete_in_leaf(
        &self,
        key: &[u8],
        threshold: usize,
        accept: &dyn Fn(&[u8]) -> bool,
    ) -> Result<Option<Option<Vec<u8>>>> {
        let mut mtr = Mtr::new(&self.pool)?;
        let leaf = self.latch_leaf(&mut mtr, key)?;
        let page = Page::new(mtr.page(leaf));
        let Ok(slot) = node::leaf_search(page, key) else {
            return Ok(Some(None));
        };
        let record = page.record(slot);
        let remaining = page.used_space() - Page::record_footprint(record.len());
        let is_root = mtr.page_no(leaf) == self.entry.root;
        if remaining < threshold && !is_root {
            return Ok(None);
        }
        let old = self.load_value_and_chain(record)?;
        if !accept(&old.0) {
            return Ok(Some(None));
        }
        mtr.edit(leaf).remove(slot);
        self.finish_replace(mtr, Some(old)).map(Some)
    }
}

/// The largest of the entries' tags if every entry of `page` (a leaf) has one (and its value
/// inline), else 0.
fn leaf_tag_of(page: Page<'_>, entry_tag: impl Fn(&[u8], &[u8]) -> Option<u64>) -> u64 {
    let mut largest = 0;
    for slot in (0..page.slot_count()).rev() {
        let record = page.record(slot);
        let node::StoredValue::Inline(value) = node::leaf_value(record) else {
            return 0;
        };
        match entry_tag(node::leaf_key(record), value) {
            Some(tag) => largest = largest.max(tag),
            None => return 0,
        }
    }
    largest
}

fn ensure_absent(space: &Space, index_id: u64) -> Result<()> {
    if space.trees().iter().any(|t| t.index_id == index_id) {
        return Err(StorageError::Format(format!(
            "index {index_id} already exists in space {}",
            space.id()
        )));
    }
    Ok(())
}

/// How many of `records` the page already holds as its first records: a split keeps those in place
/// (an ascending load's split then changes the left page by one small truncation, not a rewrite).
fn common_prefix(page: Page<'_>, records: &[Vec<u8>]) -> usize {
    records
        .iter()
        .zip(page.records())
        .take_while(|(wanted, held)| wanted.as_slice() == *held)
        .count()
}

/// Appends `records` to a page that has room for them.
fn fill(page: &mut PageMut<'_>, records: &[Vec<u8>]) {
    let start = page.view().slot_count();
    for (i, record) in records.iter().enumerate() {
        page.insert(start + i, record)
            .expect("a split or merge half fits its page");
    }
}

/// Where to split an overfull run of records: half the bytes to each side, or, when the new record
/// was appended at the end of a leaf (ascending inserts), everything but that record to the left, so
/// sequential loads leave full pages behind.
fn split_point(records: &[Vec<u8>], appending: bool) -> usize {
    if appending {
        return records.len() - 1;
    }
    let total: usize = records
        .iter()
        .map(|r| Page::record_footprint(r.len()))
        .sum();
    let mut left = 0;
    for (i, record) in records.iter().enumerate() {
        left += Page::record_footprint(record.len());
        if left * 2 >= total {
            return (i + 1).clamp(1, records.len() - 1);
        }
    }
    records.len() - 1
}

#[cfg(test)]
mod tests;
