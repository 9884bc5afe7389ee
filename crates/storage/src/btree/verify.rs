//! Shape figures and the full invariant check of one tree.
//!
//! [`BTree::verify`] walks the whole tree and reports, page by page: a wrong page type, index or
//! level; keys out of order within a page or outside the range its parent gives it; malformed
//! records; leaf sibling links that disagree with the order the parents give; broken overflow chains;
//! and any page reached twice. It is meant for a quiescent tree (`steady check`, tests).

use std::collections::BTreeSet;

use super::{node, BTree};
use crate::buffer_pool::AccessHint;
use crate::page::{read_u32, Page, PageType, NO_PAGE, TYPE_SPECIFIC};
use crate::{PageNo, Result};

/// The shape of a tree, from its branch pages only (cheap: leaves are not read).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeStats {
    /// Levels, counting the leaves (1 for a tree that is a single leaf).
    pub height: usize,
    pub branch_pages: usize,
    pub leaf_pages: usize,
}

/// What [`BTree::verify`] found.
#[derive(Debug, Clone, Default)]
pub struct Verified {
    /// Broken invariants, each with the page it was found on.
    pub problems: Vec<(PageNo, String)>,
    /// Every page the tree reaches: branches, leaves and overflow pages.
    pub pages: Vec<PageNo>,
    pub entries: u64,
    pub leaf_pages: usize,
    pub overflow_pages: usize,
}

/// A page to visit, with the level and key range its parent gives it.
struct Visit {
    page: PageNo,
    level: Option<u16>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
}

impl BTree {
    /// Height and page counts, reading only branch pages. Safe to call while the tree changes (the
    /// figures are then approximate).
    pub fn stats(&self) -> Result<TreeStats> {
        let mut stats = TreeStats::default();
        let mut pending = vec![(self.entry.root, None)];
        while let Some((page_no, level)) = pending.pop() {
            let guard = self.fetch_checked(page_no, level, AccessHint::Normal)?;
            let page = Page::new(&guard);
            stats.height = stats.height.max(page.level() as usize + 1);
            match page.level() {
                0 => stats.leaf_pages += 1,
                1 => {
                    stats.branch_pages += 1;
                    stats.leaf_pages += page.slot_count();
                }
                level => {
                    stats.branch_pages += 1;
                    pending.extend(
                        page.records()
                            .map(|r| (node::branch_child(r), Some(level - 1))),
                    );
                }
            }
        }
        Ok(stats)
    }

    /// Checks every invariant of the tree; see the module documentation.
    pub fn verify(&self) -> Result<Verified> {
        let mut checker = Checker::default();
        let mut pending = vec![Visit {
            page: self.entry.root,
            level: None,
            lower: None,
            upper: None,
        }];
        while let Some(visit) = pending.pop() {
            if !checker.reached.insert(visit.page) {
                checker.problem(visit.page, "page reached twice");
                continue;
            }
            let guard = match self
                .pool
                .fetch_read(&self.space, visit.page, AccessHint::Scan)
            {
                Ok(guard) => guard,
                Err(err) => {
                    checker.problem(visit.page, err.to_string());
                    continue;
                }
            };
            if let Err(err) = self.check_page(&guard, visit.page, visit.level) {
                checker.problem(visit.page, err.to_string());
                continue;
            }
            let page = Page::new(&guard);
            if page.level() == 0 {
                self.verify_leaf(page, &visit, &mut checker);
            } else {
                let children = verify_branch(page, &visit, &mut checker);
                pending.extend(children.into_iter().rev());
            }
        }
        checker.check_leaf_chain();
        let mut pages: Vec<PageNo> = checker.reached.iter().copied().collect();
        pages.sort_unstable();
        Ok(Verified {
            problems: checker.problems,
            pages,
            entries: checker.entries,
            leaf_pages: checker.leaves.len(),
            overflow_pages: checker.overflow_pages,
        })
    }

    fn verify_leaf(&self, page: Page<'_>, visit: &Visit, checker: &mut Checker) {
        checker.leaves.push((visit.page, page.prev(), page.next()));
        if page.slot_count() == 0 && visit.page != self.entry.root {
            checker.problem(visit.page, "empty leaf that is not the root");
        }
        let mut previous: Option<&[u8]> = None;
        for record in page.records() {
            if !node::leaf_record_is_well_formed(record) {
                checker.problem(visit.page, "malformed leaf record");
                return;
            }
            let key = node::leaf_key(record);
            checker.check_key(visit, previous, key);
            previous = Some(key);
            checker.entries += 1;
            if let node::StoredValue::Overflow { len, first } = node::leaf_value(record) {
                self.verify_chain(visit.page, first, len, checker);
            }
        }
    }

    fn verify_chain(&self, leaf: PageNo, first: PageNo, len: u32, checker: &mut Checker) {
        let mut next = first;
        let mut bytes = 0usize;
        while next != NO_PAGE {
            if !checker.reached.insert(next) {
                checker.problem(next, format!("overflow page of leaf {leaf} reached twice"));
                return;
            }
            checker.overflow_pages += 1;
            let guard = match self.pool.fetch_read(&self.space, next, AccessHint::Scan) {
                Ok(guard) => guard,
                Err(err) => return checker.problem(next, err.to_string()),
            };
            let page = Page::new(&guard);
            if page.page_type() != PageType::Overflow || page.index_id() != self.entry.index_id {
                return checker.problem(
                    next,
                    format!("leaf {leaf} points to a page that is not its overflow page"),
                );
            }
            bytes += read_u32(&guard, TYPE_SPECIFIC) as usize;
            next = page.next();
        }
        if bytes != len as usize {
            checker.problem(
                leaf,
                format!("overflow chain at {first} holds {bytes} bytes, the record says {len}"),
            );
        }
    }
}

/// Checks a branch page and returns its children to visit, left to right.
fn verify_branch(page: Page<'_>, visit: &Visit, checker: &mut Checker) -> Vec<Visit> {
    if page.slot_count() == 0 {
        checker.problem(visit.page, "branch page without children");
        return Vec::new();
    }
    let mut children = Vec::with_capacity(page.slot_count());
    let mut previous: Option<&[u8]> = None;
    for slot in 0..page.slot_count() {
        let record = page.record(slot);
        if record.len() < node::BRANCH_OVERHEAD {
            checker.problem(visit.page, "malformed branch record");
            return Vec::new();
        }
        let lower = if slot == 0 {
            visit.lower.clone()
        } else {
            let key = node::branch_key(record);
            checker.check_key(visit, previous, key);
            previous = Some(key);
            Some(key.to_vec())
        };
        let upper = if slot + 1 < page.slot_count() {
            Some(node::branch_key(page.record(slot + 1)).to_vec())
        } else {
            visit.upper.clone()
        };
        children.push(Visit {
            page: node::branch_child(record),
            level: Some(page.level() - 1),
            lower,
            upper,
        });
    }
    children
}

#[derive(Default)]
struct Checker {
    problems: Vec<(PageNo, String)>,
    reached: BTreeSet<PageNo>,
    /// Leaves in key order: (page, prev link, next link).
    leaves: Vec<(PageNo, PageNo, PageNo)>,
    entries: u64,
    overflow_pages: usize,
}

impl Checker {
    fn problem(&mut self, page: PageNo, message: impl Into<String>) {
        self.problems.push((page, message.into()));
    }

    /// A key must follow the previous key of its page and lie within the page's range.
    fn check_key(&mut self, visit: &Visit, previous: Option<&[u8]>, key: &[u8]) {
        if previous.is_some_and(|p| p >= key) {
            self.problem(visit.page, format!("keys out of order at {key:?}"));
        }
        if visit.lower.as_deref().is_some_and(|low| key < low) {
            self.problem(
                visit.page,
                format!("key {key:?} below the page's lower bound"),
            );
        }
        if visit.upper.as_deref().is_some_and(|high| key >= high) {
            self.problem(
                visit.page,
                format!("key {key:?} at or above the page's upper bound"),
            );
        }
    }

    /// The leaves' sibling links must chain them in the order the branches give.
    fn check_leaf_chain(&mut self) {
        let leaves = std::mem::take(&mut self.leaves);
        for (i, &(page, prev, next)) in leaves.iter().enumerate() {
            let expected_prev = if i == 0 { NO_PAGE } else { leaves[i - 1].0 };
            let expected_next = leaves.get(i + 1).map_or(NO_PAGE, |l| l.0);
            if prev != expected_prev {
                self.problem(page, format!("prev link {prev} should be {expected_prev}"));
            }
            if next != expected_next {
                self.problem(page, format!("next link {next} should be {expected_next}"));
            }
        }
        self.leaves = leaves;
    }
}
