//! Deletes that leave a page under-full: the page borrows from or merges with a sibling, and a root
//! left with one child gives way to it; each rebalancing is one mini-transaction with the delete.

use super::*;

impl BTree {
    /// A delete that may merge pages up to the root: those left with fewer than `threshold`
    /// bytes.
    pub(super) fn delete_with_merges(
        &self,
        key: &[u8],
        threshold: usize,
        accept: &dyn Fn(&[u8]) -> bool,
    ) -> Result<Option<Vec<u8>>> {
        let mut mtr = Mtr::new(&self.pool)?;
        let max_record = Page::record_footprint(self.limits.max_record);
        let path = self.latch_path(&mut mtr, key, |page| {
            page.used_space() >= threshold + max_record && page.slot_count() > 2
        })?;
        let leaf = path.last().expect("a path ends at a leaf").handle;
        let page = Page::new(mtr.page(leaf));
        let Ok(slot) = node::leaf_search(page, key) else {
            return Ok(None);
        };
        let (value, chain) = self.load_value_and_chain(page.record(slot))?;
        if !accept(&value) {
            return Ok(None);
        }
        mtr.edit(leaf).remove(slot);
        let mut freed = self.rebalance(&mut mtr, &path, threshold)?;
        freed.extend(chain);
        for page_no in freed {
            self.space.free_page(&mut mtr, page_no)?;
        }
        mtr.commit();
        Ok(Some(value))
    }

    /// Merges the pages of the path left with fewer than `threshold` bytes, bottom up; returns
    /// the pages to free.
    pub(super) fn rebalance(
        &self,
        mtr: &mut Mtr<'_>,
        path: &[Step],
        threshold: usize,
    ) -> Result<Vec<PageNo>> {
        let mut freed = Vec::new();
        for depth in (0..path.len()).rev() {
            let handle = path[depth].handle;
            if depth == 0 {
                if mtr.page_no(handle) == self.entry.root {
                    self.shrink_root(mtr, handle, &mut freed)?;
                }
                break;
            }
            if Page::new(mtr.page(handle)).used_space() >= threshold {
                break;
            }
            let parent = path[depth - 1].handle;
            if !self.merge_with_sibling(mtr, parent, path[depth], &mut freed)? {
                break;
            }
        }
        Ok(freed)
    }

    /// Merges the child at `step` with a neighbour under the same parent if both fit in one page: the
    /// right page's records move to the left page and the right page is freed. False if not merged.
    pub(super) fn merge_with_sibling(
        &self,
        mtr: &mut Mtr<'_>,
        parent: PageHandle,
        step: Step,
        freed: &mut Vec<PageNo>,
    ) -> Result<bool> {
        let parent_page = Page::new(mtr.page(parent));
        let count = parent_page.slot_count();
        let (left_slot, right_slot) = if step.position + 1 < count {
            (step.position, step.position + 1)
        } else if step.position > 0 {
            (step.position - 1, step.position)
        } else {
            return Ok(false);
        };
        let separator = node::branch_key(parent_page.record(right_slot)).to_vec();
        let left_no = node::branch_child(parent_page.record(left_slot));
        let right_no = node::branch_child(parent_page.record(right_slot));
        let level = Page::new(mtr.page(step.handle)).level();
        let left = self.latch_checked(mtr, left_no, Some(level))?;
        let right = self.latch_checked(mtr, right_no, Some(level))?;
        if Page::new(mtr.page(left)).used_space() + self.merged_bytes(mtr.page(right), &separator)
            > self.limits.usable
        {
            return Ok(false);
        }
        let mut moved: Vec<Vec<u8>> = Page::new(mtr.page(right))
            .records()
            .map(<[u8]>::to_vec)
            .collect();
        if level > 0 {
            moved[0] = node::encode_branch(&separator, node::branch_child(&moved[0]));
        }
        let right_next = Page::new(mtr.page(right)).next();
        if level == 0 && right_next != NO_PAGE {
            let after = self.latch_checked(mtr, right_next, Some(0))?;
            mtr.edit(after).set_prev(left_no);
        }
        let mut left_page = mtr.edit(left);
        let start = left_page.view().slot_count();
        for (i, record) in moved.iter().enumerate() {
            left_page
                .insert(start + i, record)
                .expect("the merged records' room was checked");
        }
        if level == 0 {
            left_page.set_next(right_next);
        }
        mtr.edit(parent).remove(right_slot);
        freed.push(right_no);
        Ok(true)
    }

    /// Bytes the records of `right` take once moved into its left sibling, read from the page
    /// header (a leaf that cannot merge is the common case, and copying its records only to learn
    /// that cost a purge pass O(page) per removed entry): a branch's first record takes the
    /// parent's `separator` as its key.
    fn merged_bytes(&self, right: &[u8], separator: &[u8]) -> usize {
        let page = Page::new(right);
        let used = page.used_space();
        if page.level() == 0 || page.slot_count() == 0 {
            return used;
        }
        let first = page.record(0);
        let new_first = node::encode_branch(separator, node::branch_child(first));
        used - Page::record_footprint(first.len()) + Page::record_footprint(new_first.len())
    }

    /// A root branch with a single child takes over that child's records, one level down.
    pub(super) fn shrink_root(
        &self,
        mtr: &mut Mtr<'_>,
        root: PageHandle,
        freed: &mut Vec<PageNo>,
    ) -> Result<()> {
        let page = Page::new(mtr.page(root));
        if page.level() == 0 || page.slot_count() != 1 {
            return Ok(());
        }
        let (child_no, root_level) = (node::branch_child(page.record(0)), page.level());
        let child = self.latch_checked(mtr, child_no, Some(root_level - 1))?;
        let child_page = Page::new(mtr.page(child));
        let (level, page_type) = (child_page.level(), child_page.page_type());
        let records: Vec<Vec<u8>> = child_page.records().map(<[u8]>::to_vec).collect();
        let mut root_page = mtr.edit(root);
        root_page.format(
            page_type,
            self.space.id(),
            self.entry.root,
            self.entry.index_id,
            level,
        );
        fill(&mut root_page, &records);
        freed.push(child_no);
        Ok(())
    }
}
