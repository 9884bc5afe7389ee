//! Offline verification of a stopped database (`steady check DIR`).
//!
//! For every space file: the header and extent map must decode (checked by [`Space::open`]); every
//! allocated page must pass its checksum and say it is the page it is; every tree listed in the header
//! must satisfy the B+tree invariants ([`BTree::verify`]); and the pages the trees reach must be exactly
//! the pages the extent map says their segments own — a reachable free page or an allocated page that
//! nothing reaches is reported. Each problem names its space and page.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use crate::btree::BTree;
use crate::buffer_pool::{AccessHint, BufferPool, PoolConfig};
use crate::io::Vfs;
use crate::space::{Space, TreeEntry, SYSTEM_SEGMENT};
use crate::{PageNo, Result, SpaceId, StorageError};

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub space: SpaceId,
    pub page: Option<PageNo>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.page {
            Some(page) => write!(f, "space {} page {}: {}", self.space, page, self.message),
            None => write!(f, "space {}: {}", self.space, self.message),
        }
    }
}

/// What a check found.
#[derive(Debug, Default)]
pub struct CheckReport {
    pub spaces: usize,
    pub trees: usize,
    pub pages_checked: u64,
    pub problems: Vec<Problem>,
}

/// Progress of a check: pages verified so far out of the total allocated.
#[derive(Debug, Clone, Copy)]
pub struct CheckProgress {
    pub pages_done: u64,
    pub pages_total: u64,
}

/// Checks every space of the data directory behind `vfs`.
pub fn check_directory(
    vfs: &dyn Vfs,
    progress: &mut dyn FnMut(CheckProgress),
) -> Result<CheckReport> {
    let names = vfs
        .list()
        .map_err(|e| StorageError::io("listing the data directory", e))?;
    let mut report = CheckReport::default();
    let mut spaces = Vec::new();
    for id in names.iter().filter_map(|n| Space::id_from_file_name(n)) {
        report.spaces += 1;
        match Space::open(vfs, id) {
            Ok(space) => spaces.push(space),
            Err(err) => report.problems.push(problem_from_error(id, err)),
        }
    }
    let Some(page_size) = spaces.first().map(|s| s.page_size()) else {
        return Ok(report);
    };
    let mut config = PoolConfig::with_budget(page_size, 64 << 20);
    config.background_flush = false;
    let pool = BufferPool::new(config)?;
    let pages_total = spaces
        .iter()
        .map(|s| s.allocated_pages().len() as u64)
        .sum();
    for space in &spaces {
        check_pages(&pool, space, &mut report, pages_total, progress);
        check_trees(&pool, space, &mut report);
    }
    Ok(report)
}

fn problem_from_error(space: SpaceId, err: StorageError) -> Problem {
    let page = match &err {
        StorageError::Corrupt { page, .. } => Some(*page),
        _ => None,
    };
    Problem {
        space,
        page,
        message: err.to_string(),
    }
}

fn check_pages(
    pool: &Arc<BufferPool>,
    space: &Arc<Space>,
    report: &mut CheckReport,
    pages_total: u64,
    progress: &mut dyn FnMut(CheckProgress),
) {
    for (page_no, _) in space.allocated_pages() {
        if let Err(err) = pool.fetch_read(space, page_no, AccessHint::Scan) {
            report.problems.push(problem_from_error(space.id(), err));
        }
        report.pages_checked += 1;
        if report.pages_checked.is_multiple_of(1024) || report.pages_checked == pages_total {
            progress(CheckProgress {
                pages_done: report.pages_checked,
                pages_total,
            });
        }
    }
}

fn check_trees(pool: &Arc<BufferPool>, space: &Arc<Space>, report: &mut CheckReport) {
    let trees = space.trees();
    let mut reached = BTreeSet::new();
    for entry in &trees {
        report.trees += 1;
        check_tree(pool, space, entry, &mut reached, report);
    }
    let owners: BTreeSet<u32> = trees
        .iter()
        .flat_map(|t| [t.leaf_segment, t.branch_segment])
        .collect();
    for (page_no, owner) in space.allocated_pages() {
        if owner == SYSTEM_SEGMENT || reached.contains(&page_no) {
            continue;
        }
        let message = if owners.contains(&owner) {
            format!("allocated to segment {owner} but reached by no tree (leaked)")
        } else {
            format!("allocated to segment {owner}, which no tree owns (leaked)")
        };
        report.problems.push(Problem {
            space: space.id(),
            page: Some(page_no),
            message,
        });
    }
}

fn check_tree(
    pool: &Arc<BufferPool>,
    space: &Arc<Space>,
    entry: &TreeEntry,
    reached: &mut BTreeSet<PageNo>,
    report: &mut CheckReport,
) {
    let tree = match BTree::open(pool.clone(), space.clone(), entry.index_id) {
        Ok(tree) => tree,
        Err(err) => return report.problems.push(problem_from_error(space.id(), err)),
    };
    let verified = match tree.verify() {
        Ok(verified) => verified,
        Err(err) => return report.problems.push(problem_from_error(space.id(), err)),
    };
    for (page, message) in verified.problems {
        report.problems.push(Problem {
            space: space.id(),
            page: Some(page),
            message: format!("index {}: {message}", entry.index_id),
        });
    }
    let segments = [entry.leaf_segment, entry.branch_segment];
    for page_no in verified.pages {
        match space.page_owner(page_no) {
            Some(owner) if segments.contains(&owner) => {}
            Some(owner) => report.problems.push(Problem {
                space: space.id(),
                page: Some(page_no),
                message: format!("index {} reaches a page of segment {owner}", entry.index_id),
            }),
            None => report.problems.push(Problem {
                space: space.id(),
                page: Some(page_no),
                message: format!(
                    "index {} reaches a page the extent map says is free",
                    entry.index_id
                ),
            }),
        }
        if !reached.insert(page_no) {
            report.problems.push(Problem {
                space: space.id(),
                page: Some(page_no),
                message: "page reached by more than one tree".into(),
            });
        }
    }
}
