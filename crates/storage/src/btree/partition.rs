//! Partitions of a tree's key space, for scans that split a range among threads.
//!
//! The cut keys are separators read from the root and, when the root has too few children, from
//! its children (latched under the root's latch, top-down as a descent latches). Any ascending
//! keys cut a range into parts that together hold every key exactly once, so a partition needs no
//! latch after it is read: a split or merge meanwhile only makes the parts less even.

use std::ops::{Bound, Range};

use super::{node, BTree};
use crate::buffer_pool::AccessHint;
use crate::page::Page;
use crate::Result;

/// Subtrees wanted per part before the root's children are looked into.
const SUBTREES_PER_PART: usize = 16;

/// Keys that cut (a range of) a tree into parts of about equal size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// Ascending; part `i` holds the keys from `keys[i - 1]` (inclusive) to `keys[i]` (exclusive).
    pub keys: Vec<Vec<u8>>,
    /// How many leaves the range spans at least (exactly, in a tree of up to three levels).
    pub leaves: usize,
}

impl BTree {
    /// Keys cutting the part of the tree in `start..end` into at most `parts` parts of about
    /// equal size. Only the branch slots over the range are read, so a short range costs a look
    /// at the root.
    pub fn partition(
        &self,
        parts: usize,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> Result<Partition> {
        let root = self.fetch_checked(self.entry.root, None, AccessHint::Normal)?;
        let page = Page::new(&root);
        let level = page.level();
        if level == 0 {
            return Ok(Partition {
                keys: Vec::new(),
                leaves: 1,
            });
        }
        let slots = slots_over(page, start, end);
        let mut separators: Vec<Vec<u8>> = Vec::new();
        let mut subtrees = slots.len();
        if level >= 2 && subtrees < parts * SUBTREES_PER_PART {
            subtrees = 0;
            for slot in slots.clone() {
                if slot > slots.start {
                    separators.push(node::branch_key(page.record(slot)).to_vec());
                }
                let child_no = node::branch_child(page.record(slot));
                let child = self.fetch_checked(child_no, Some(level - 1), AccessHint::Normal)?;
                let child = Page::new(&child);
                let inner = slots_over(child, start, end);
                subtrees += inner.len();
                separators.extend(
                    inner
                        .skip(1)
                        .map(|s| node::branch_key(child.record(s)).to_vec()),
                );
            }
        } else {
            separators.extend(
                slots
                    .skip(1)
                    .map(|s| node::branch_key(page.record(s)).to_vec()),
            );
        }
        Ok(Partition {
            keys: even_cuts(separators, parts),
            leaves: subtrees,
        })
    }
}

/// A range of keys: `(start, end)`.
pub type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

impl Partition {
    /// The parts of `start..end` (the range the partition was read for) as ranges, in order:
    /// from `start`, or the cut before (inclusive), to the next cut (exclusive), or `end`.
    pub fn ranges(self, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> Vec<KeyRange> {
        let mut ranges = Vec::with_capacity(self.keys.len() + 1);
        let mut lower = start;
        for cut in self.keys {
            let next = Bound::Included(cut.clone());
            ranges.push((std::mem::replace(&mut lower, next), Bound::Excluded(cut)));
        }
        ranges.push((lower, end));
        ranges
    }
}

/// The slots of a branch page whose children hold keys in `start..end`: each separator after
/// the first of them lies inside the range.
fn slots_over(page: Page<'_>, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Range<usize> {
    let first = match start {
        Bound::Unbounded => 0,
        Bound::Included(key) | Bound::Excluded(key) => node::branch_search(page, key, false),
    };
    let last = match end {
        Bound::Unbounded => page.slot_count() - 1,
        Bound::Included(key) => node::branch_search(page, key, false),
        Bound::Excluded(key) => node::branch_search(page, key, true),
    };
    first..last.max(first) + 1
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
    use super::{even_cuts, Partition};
    use std::ops::Bound;

    #[test]
    fn ranges_run_from_start_through_each_cut_to_end() {
        let partition = Partition {
            keys: vec![vec![5], vec![9]],
            leaves: 3,
        };
        let ranges = partition.ranges(Bound::Included(vec![1]), Bound::Unbounded);
        assert_eq!(
            ranges,
            vec![
                (Bound::Included(vec![1]), Bound::Excluded(vec![5])),
                (Bound::Included(vec![5]), Bound::Excluded(vec![9])),
                (Bound::Included(vec![9]), Bound::Unbounded),
            ]
        );
        let whole = Partition {
            keys: Vec::new(),
            leaves: 1,
        };
        assert_eq!(
            whole.ranges(Bound::Unbounded, Bound::Excluded(vec![7])),
            vec![(Bound::Unbounded, Bound::Excluded(vec![7]))]
        );
    }

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
