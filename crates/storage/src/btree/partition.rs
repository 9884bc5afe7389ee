//! Partitions of a tree's key space, for scans that split a range among threads.
//!
//! The cut keys are separators read from the root and, when the root has too few children, from
//! its children (latched under the root's latch, top-down as a descent latches). Any ascending
//! keys cut a range into parts that together hold every key exactly once, so a partition needs no
//! latch after it is read: a split or merge meanwhile only makes the parts less even.

use super::{node, BTree};
use crate::buffer_pool::AccessHint;
use crate::page::Page;
use crate::Result;

/// Subtrees wanted per part before the root's children are looked into.
const SUBTREES_PER_PART: usize = 16;

/// Keys that cut a tree into parts of about equal size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// Ascending; part `i` holds the keys from `keys[i - 1]` (inclusive) to `keys[i]` (exclusive).
    pub keys: Vec<Vec<u8>>,
    /// How many leaves the tree has at least (exactly, for a tree of up to three levels).
    pub leaves: usize,
}

impl BTree {
    /// Keys cutting the tree into at most `parts` parts of about equal size.
    pub fn partition(&self, parts: usize) -> Result<Partition> {
        let root = self.fetch_checked(self.entry.root, None, AccessHint::Normal)?;
        let page = Page::new(&root);
        let level = page.level();
        if level == 0 {
            return Ok(Partition {
                keys: Vec::new(),
                leaves: 1,
            });
        }
        let mut separators: Vec<Vec<u8>> = Vec::new();
        let mut subtrees = page.slot_count();
        if level >= 2 && subtrees < parts * SUBTREES_PER_PART {
            subtrees = 0;
            for slot in 0..page.slot_count() {
                if slot > 0 {
                    separators.push(node::branch_key(page.record(slot)).to_vec());
                }
                let child_no = node::branch_child(page.record(slot));
                let child = self.fetch_checked(child_no, Some(level - 1), AccessHint::Normal)?;
                let child = Page::new(&child);
                separators.extend(
                    (1..child.slot_count()).map(|s| node::branch_key(child.record(s)).to_vec()),
                );
                subtrees += child.slot_count();
            }
        } else {
            separators
                .extend((1..page.slot_count()).map(|s| node::branch_key(page.record(s)).to_vec()));
        }
        Ok(Partition {
            keys: even_cuts(separators, parts),
            leaves: subtrees,
        })
    }
}

/// Of the (ascending) separators of `n + 1` subtrees, the at most `parts - 1` that cut them most
/// evenly.
fn even_cuts(separators: Vec<Vec<u8>>, parts: usize) -> Vec<Vec<u8>> {
    let subtrees = separators.len() + 1;
    let mut positions: Vec<usize> = (1..parts)
        .filter_map(|i| (i * subtrees / parts).checked_sub(1))
        .collect();
    positions.dedup();
    let mut keys = Vec::with_capacity(positions.len());
    let mut wanted = positions.into_iter().peekable();
    for (at, key) in separators.into_iter().enumerate() {
        if wanted.next_if_eq(&at).is_some() {
            keys.push(key);
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::even_cuts;

    fn keys(n: u8) -> Vec<Vec<u8>> {
        (1..=n).map(|k| vec![k]).collect()
    }

    #[test]
    fn even_cuts_split_the_subtrees_evenly() {
        // 9 separators, 10 subtrees: halves cut before subtree 5 (separator 5).
        assert_eq!(even_cuts(keys(9), 2), vec![vec![5]]);
        assert_eq!(
            even_cuts(keys(9), 5),
            vec![vec![2], vec![4], vec![6], vec![8]]
        );
    }

    #[test]
    fn even_cuts_never_cut_more_than_there_are_subtrees() {
        assert_eq!(even_cuts(keys(1), 8), vec![vec![1]]);
        assert!(even_cuts(Vec::new(), 4).is_empty());
    }
}
