//! Bulk build: a tree made from sorted entries, bottom up, without a single split.
//!
//! Leaves are filled left to right to [`FILL`] of a page and written once each, as fresh pages (so
//! each is logged once, by the mini-transaction that writes it, as the operations that rebuild it
//! from zeros: its records, each after the prefix it shares with the one before); then each branch
//! level is built the same way from the separators of the level below, until a level has one page:
//! the root. The log grows by about the size of the tree and no checkpoint is forced (seed 001).
//!
//! Crash safety: the tree is registered in the space header at the start with no root, and gets its
//! root in the last mini-transaction. [`discard_unfinished_builds`], run when a data directory is
//! opened, drops every tree without a root with all its extents, so a build cut short by a crash
//! leaves the space as if it had never started.

use std::sync::Arc;

use super::{ensure_absent, node, BTree};
use crate::buffer_pool::BufferPool;
use crate::mtr::Mtr;
use crate::page::{Page, PageMut, PageType, NO_PAGE};
use crate::space::{SegmentId, Space, TreeEntry};
use crate::{PageNo, Result, StorageError};

/// Share of a page a bulk build fills, leaving room for later inserts without immediate splits.
pub const FILL: f64 = 15.0 / 16.0;

/// How far a bulk build has got.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuildProgress {
    pub entries: u64,
    pub pages_written: u64,
}

impl BTree {
    /// Builds tree `index_id` in `space` from `entries`, which must come in strictly ascending key
    /// order. `progress` is told after every page written.
    pub fn bulk_build<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        pool: Arc<BufferPool>,
        space: Arc<Space>,
        index_id: u64,
        entries: impl IntoIterator<Item = Result<(K, V)>>,
        progress: &mut dyn FnMut(BuildProgress),
    ) -> Result<BTree> {
        ensure_absent(&space, index_id)?;
        let mut mtr = Mtr::new(&pool)?;
        let entry = TreeEntry {
            index_id,
            root: NO_PAGE,
            leaf_segment: space.create_segment(&mut mtr)?,
            branch_segment: space.create_segment(&mut mtr)?,
        };
        space.register_tree(&mut mtr, entry)?;
        mtr.commit();
        let mut tree = BTree::with_entry(pool, space, entry);
        match tree.build_levels(entries, progress) {
            Ok(root) => {
                let mut mtr = Mtr::new(&tree.pool)?;
                tree.space.set_tree_root(&mut mtr, index_id, root)?;
                mtr.commit();
                tree.entry.root = root;
                Ok(tree)
            }
            Err(err) => {
                let mut mtr = Mtr::new(&tree.pool)?;
                tree.space.drop_tree(&mut mtr, index_id)?;
                mtr.commit();
                Err(err)
            }
        }
    }

    /// Writes the leaves, then the branch levels; returns the root.
    fn build_levels<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        entries: impl IntoIterator<Item = Result<(K, V)>>,
        progress: &mut dyn FnMut(BuildProgress),
    ) -> Result<PageNo> {
        let mut stats = BuildProgress::default();
        let mut leaves = LevelBuilder::new(self, 0, self.entry.leaf_segment)?;
        for entry in entries {
            let (key, value) = entry?;
            let (key, value) = (key.as_ref(), value.as_ref());
            self.check_sizes(key, value)?;
            if stats.entries > 0 && key <= leaves.last_key.as_slice() {
                return Err(StorageError::Config(format!(
                    "bulk build input is not in strictly ascending key order at {key:?}"
                )));
            }
            let record = if self.limits.is_inline(key.len(), value.len()) {
                node::encode_leaf(key, node::StoredValue::Inline(value))
            } else {
                let mut mtr = Mtr::new(&self.pool)?;
                let record = self.make_record(&mut mtr, key, value)?;
                mtr.commit();
                record
            };
            leaves.push(key, record, None, &mut stats, progress)?;
            stats.entries += 1;
        }
        let mut level_pages = leaves.finish(&mut stats, progress)?;
        let mut level = 1;
        while level_pages.len() > 1 {
            let mut branches = LevelBuilder::new(self, level, self.entry.branch_segment)?;
            for (separator, child) in level_pages {
                let record = node::encode_branch(&separator, child);
                branches.push(&separator, record, Some(child), &mut stats, progress)?;
            }
            level_pages = branches.finish(&mut stats, progress)?;
            level += 1;
        }
        Ok(level_pages[0].1)
    }
}

/// Fills the pages of one level left to right.
struct LevelBuilder<'t> {
    tree: &'t BTree,
    level: u16,
    segment: SegmentId,
    image: Vec<u8>,
    page_no: PageNo,
    last_key: Vec<u8>,
    /// Each finished page with its separator (its lower key bound), in order.
    pages: Vec<(Vec<u8>, PageNo)>,
    fill_limit: usize,
}

impl<'t> LevelBuilder<'t> {
    fn new(tree: &'t BTree, level: u16, segment: SegmentId) -> Result<Self> {
        let mut mtr = Mtr::new(&tree.pool)?;
        let page_no = tree.space.allocate_page(&mut mtr, segment)?;
        mtr.commit();
        let mut builder = LevelBuilder {
            tree,
            level,
            segment,
            image: vec![0; tree.space.page_size()],
            page_no,
            last_key: Vec::new(),
            pages: Vec::new(),
            fill_limit: (tree.limits.usable as f64 * FILL) as usize,
        };
        builder.format(NO_PAGE);
        Ok(builder)
    }

    fn format(&mut self, prev: PageNo) {
        let page_type = if self.level == 0 {
            PageType::Leaf
        } else {
            PageType::Branch
        };
        let (space, index) = (self.tree.space.id(), self.tree.entry.index_id);
        let mut page = PageMut::new(&mut self.image);
        page.format(page_type, space, self.page_no, index, self.level);
        if self.level == 0 {
            page.set_prev(prev);
        }
    }

    /// Appends a record with its key (for a branch level: the child's separator and the child),
    /// starting a new page when this one is full.
    fn push(
        &mut self,
        key: &[u8],
        mut record: Vec<u8>,
        child: Option<PageNo>,
        stats: &mut BuildProgress,
        progress: &mut dyn FnMut(BuildProgress),
    ) -> Result<()> {
        let page = Page::new(&self.image);
        let used = page.used_space() + Page::record_footprint(record.len());
        if page.slot_count() > 0 && used > self.fill_limit {
            self.next_page(stats, progress)?;
        }
        if Page::new(&self.image).slot_count() == 0 {
            let separator = match child {
                Some(_) => key.to_vec(),
                None if self.pages.is_empty() => Vec::new(),
                None => node::shortest_separator(&self.last_key, key),
            };
            self.pages.push((separator, self.page_no));
            if let Some(child) = child {
                record = node::encode_branch(b"", child);
            }
        }
        let slot = Page::new(&self.image).slot_count();
        PageMut::new(&mut self.image)
            .insert(slot, &record)
            .expect("a record fits an empty page");
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        Ok(())
    }

    /// Writes the current page, linked to a newly allocated next page, and starts that page.
    fn next_page(
        &mut self,
        stats: &mut BuildProgress,
        progress: &mut dyn FnMut(BuildProgress),
    ) -> Result<()> {
        let mut mtr = Mtr::new(&self.tree.pool)?;
        let next = self.tree.space.allocate_page(&mut mtr, self.segment)?;
        if self.level == 0 {
            PageMut::new(&mut self.image).set_next(next);
        }
        self.write(&mut mtr)?;
        mtr.commit();
        stats.pages_written += 1;
        progress(*stats);
        let previous = self.page_no;
        self.page_no = next;
        self.format(previous);
        Ok(())
    }

    fn write(&self, mtr: &mut Mtr<'_>) -> Result<()> {
        let handle = mtr.create(&self.tree.space, self.page_no)?;
        mtr.edit(handle).copy_image(&self.image);
        Ok(())
    }

    /// Writes the last page; returns the level's pages with their separators.
    fn finish(
        mut self,
        stats: &mut BuildProgress,
        progress: &mut dyn FnMut(BuildProgress),
    ) -> Result<Vec<(Vec<u8>, PageNo)>> {
        if self.pages.is_empty() {
            self.pages.push((Vec::new(), self.page_no));
        }
        let mut mtr = Mtr::new(&self.tree.pool)?;
        self.write(&mut mtr)?;
        mtr.commit();
        stats.pages_written += 1;
        progress(*stats);
        Ok(self.pages)
    }
}

/// Drops every tree of `space` whose bulk build never finished (no root), with all its pages.
/// Returns how many were dropped.
pub fn discard_unfinished_builds(pool: &BufferPool, space: &Arc<Space>) -> Result<usize> {
    let unfinished: Vec<u64> = space
        .trees()
        .iter()
        .filter(|t| t.root == NO_PAGE)
        .map(|t| t.index_id)
        .collect();
    for &index_id in &unfinished {
        let mut mtr = Mtr::new(pool)?;
        space.drop_tree(&mut mtr, index_id)?;
        mtr.commit();
    }
    Ok(unfinished.len())
}
