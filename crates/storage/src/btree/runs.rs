//! Operations on runs of sorted keys, one mini-transaction per leaf: a run costs one descent, one
//! latch and one redo record per leaf instead of one per key. Bulk inserts (`insert_run_if_absent`),
//! reads and in-place replacements of rows (`get_many`, `replace_run`, `replace_run_where` for
//! rows that must still be as they were read, and `rewrite_run`, which reads, decides and
//! replaces each row of a run under one latch), and deletes of many
//! keys or key ranges (`delete_sorted`, `delete_ranges`, which merge pages as single deletes do).
//! Each leaves the tree exactly as the same operations one key at a time would.

use std::borrow::Cow;
use std::ops::Bound;

use super::cursor::KeyedReadAhead;
use super::node::{self, StoredValue};
use super::BTree;
use crate::buffer_pool::AccessHint;
use crate::mtr::{Mtr, PageHandle};
use crate::page::{Page, NO_PAGE};
use crate::Result;

/// What one leaf of a range delete removed, and where the delete goes on (see
/// `BTree::delete_ranges_in_one_leaf`).
type RangeDeleted = (usize, Option<(usize, Option<Vec<u8>>)>);

impl BTree {
    /// Inserts the leading entries of `entries` that can go into the leaf of the first key in one
    /// mini-transaction — one descent, one latch and one redo record for the run instead of one per
    /// entry — and returns how many it inserted. The run stops before an entry whose key does not
    /// ascend, is present, lies past the leaf's last key while the leaf has a right sibling (the
    /// leaf's upper bound is then unknown here), is too large, needs an overflow chain, or does
    /// not fit in what room is left. 0 means the first entry was not inserted: the caller inserts
    /// it on its own ([`BTree::insert_if_absent`] tells a present key from a full leaf, and
    /// refuses an entry that is too large).
    pub fn insert_run_if_absent(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<usize> {
        let Some((first, _)) = entries.first() else {
            return Ok(0);
        };
        let mut mtr = Mtr::new(&self.pool)?;
        let leaf = self.latch_leaf(&mut mtr, first)?;
        let page = Page::new(mtr.page(leaf));
        let rightmost = page.next() == NO_PAGE;
        let last_key = page
            .slot_count()
            .checked_sub(1)
            .map(|last| node::leaf_key(page.record(last)).to_vec());
        let mut room = page.free_space();
        let mut slots = Vec::new();
        let mut previous: Option<&[u8]> = None;
        for (key, value) in entries {
            let inside = rightmost
                || last_key
                    .as_deref()
                    .is_some_and(|last| key.as_slice() <= last);
            let ascends = previous.is_none_or(|p| p < key.as_slice());
            let needed =
                Page::record_footprint(self.limits.leaf_record_len(key.len(), value.len()));
            if !inside
                || !ascends
                || self.check_sizes(key, value).is_err()
                || !self.limits.is_inline(key.len(), value.len())
                || needed > room
            {
                break;
            }
            let page = Page::new(mtr.page(leaf));
            let Err(slot) = search_in_run(page, key, slots.last().map(|s| s - (slots.len() - 1)))
            else {
                break;
            };
            room -= needed;
            slots.push(slot + slots.len());
            previous = Some(key);
        }
        let records = entries
            .iter()
            .map(|(key, value)| (key.as_slice(), value.as_slice()));
        Ok(commit_run(mtr, leaf, records, &slots, Placing::Insert))
    }

    /// The values of `sorted` keys (ascending), None where a key is absent: one descent per leaf
    /// the keys fall in, not one per key, and the leaves of the coming keys read ahead.
    pub fn get_many(&self, sorted: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        let mut values = Vec::with_capacity(sorted.len());
        let mut ahead = KeyedReadAhead::default();
        while values.len() < sorted.len() {
            let at = values.len();
            let leaf = self.leaf_for_keys(&mut ahead, sorted, at, AccessHint::Normal)?;
            let page = Page::new(&leaf.guard);
            let upper = leaf.bounds.upper.as_deref();
            let start = values.len();
            let mut previous = None;
            for key in &sorted[start..] {
                if values.len() > start && upper.is_some_and(|upper| key.as_slice() >= upper) {
                    break;
                }
                let found = search_in_run(page, key, previous);
                previous = Some(node::found_slot(found));
                values.push(match found {
                    Ok(slot) => Some(self.load_value(page.record(slot))?),
                    Err(_) => None,
                });
            }
        }
        Ok(values)
    }

    /// Replaces the values of the leading entries of `entries` whose keys are present in the leaf
    /// of the first key, in one mini-transaction, and returns how many it replaced. The run stops
    /// before an entry whose key does not ascend or is absent, whose old or new value is not
    /// inline, that is too large, or whose new record does not fit in what room is left. 0 means
    /// the first entry was not replaced: the caller writes it on its own ([`BTree::insert`]).
    pub fn replace_run(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<usize> {
        self.replace_run_where(entries, |_, _| true, |_| Ok(()))
    }

    /// [`BTree::replace_run`], where the run also stops before an entry whose present value
    /// `accept` (given the entry's position in `entries` and that value) refuses. With the leaf
    /// still latched — so no one else changes those entries meanwhile — `prepare` is told how
    /// many entries are about to be replaced (at least one) and may write to *other* trees first
    /// (nested mini-transactions: their redo comes before the leaf's); if it fails, the leaf is
    /// left as it was. 0 means the first entry was refused and nothing was written.
    pub fn replace_run_where<E: From<crate::StorageError>>(
        &self,
        entries: &[(Vec<u8>, Vec<u8>)],
        accept: impl Fn(usize, &[u8]) -> bool,
        prepare: impl FnOnce(usize) -> std::result::Result<(), E>,
    ) -> std::result::Result<usize, E> {
        let keys = entries.iter().map(|(key, _)| key.as_slice());
        let decide = |at: usize, present: &[u8]| {
            Ok(if accept(at, present) {
                RunChoice::Replace(Cow::Borrowed(entries[at].1.as_slice()), ())
            } else {
                RunChoice::Stop
            })
        };
        let done = self.rewrite_run(keys, decide, |units: &mut [()]| prepare(units.len()))?;
        Ok(done.positions.len())
    }

    /// Rewrites a run of present keys of one leaf under one latch, deciding each key's new value
    /// from its present one: the leading keys of `keys` (ascending) present in the leaf of the
    /// first, each given to `decide` (its position in `keys` and its present value) to be replaced
    /// (with a payload of the caller's), passed over unchanged, or to stop the run. The run also
    /// stops before a key that does not ascend or is absent, whose present or new value is not
    /// inline, or whose new record does not fit in what room is left. With the leaf still
    /// latched, `prepare` gets the payloads of the keys about to be replaced (at least one) and
    /// may write to *other* trees first, as for [`BTree::replace_run_where`]; if it or `decide`
    /// fails, the leaf is left as it was. One descent, one latch, one redo record for the run —
    /// a read, a decision and a write per row without a second visit to the leaf.
    pub fn rewrite_run<'k, 'v, T, E: From<crate::StorageError>>(
        &self,
        keys: impl IntoIterator<Item = &'k [u8]>,
        mut decide: impl FnMut(usize, &[u8]) -> std::result::Result<RunChoice<'v, T>, E>,
        prepare: impl FnOnce(&mut [T]) -> std::result::Result<(), E>,
    ) -> std::result::Result<RunRewritten<T>, E> {
        let mut keys = keys.into_iter().peekable();
        let Some(&first) = keys.peek() else {
            return Ok(RunRewritten::none());
        };
        let mut mtr = Mtr::new(&self.pool)?;
        let leaf = self.latch_leaf(&mut mtr, first)?;
        let page = Page::new(mtr.page(leaf));
        let mut room = page.free_space();
        let (mut records, mut slots) = (Vec::new(), Vec::new());
        let (mut positions, mut payloads) = (Vec::new(), Vec::new());
        let mut passed = 0;
        let (mut previous, mut previous_slot): (Option<&[u8]>, Option<usize>) = (None, None);
        for (at, key) in keys.enumerate() {
            if previous.is_some_and(|p| p >= key) {
                break;
            }
            let Ok(slot) = search_in_run(page, key, previous_slot) else {
                break;
            };
            let old = page.record(slot);
            let StoredValue::Inline(present) = node::leaf_value(old) else {
                break;
            };
            match decide(at, present)? {
                RunChoice::Stop => break,
                RunChoice::Pass => {}
                RunChoice::Replace(value, payload) => {
                    let needed =
                        Page::record_footprint(self.limits.leaf_record_len(key.len(), value.len()));
                    let freed = Page::record_footprint(old.len());
                    if self.check_sizes(key, &value).is_err()
                        || !self.limits.is_inline(key.len(), value.len())
                        || needed > room + freed
                    {
                        break;
                    }
                    room = room + freed - needed;
                    records.push((key, value));
                    slots.push(slot);
                    positions.push(at);
                    payloads.push(payload);
                }
            }
            passed = at + 1;
            previous = Some(key);
            previous_slot = Some(slot);
        }
        if !payloads.is_empty() {
            prepare(&mut payloads)?;
        }
        let records = records.iter().map(|(key, value)| (*key, value.as_ref()));
        commit_run(mtr, leaf, records, &slots, Placing::Replace);
        Ok(RunRewritten {
            passed,
            positions,
            payloads,
        })
    }

    /// Removes the keys of `sorted` (ascending, without duplicates) that are present and returns how
    /// many were. The keys that fall in one leaf are removed in one mini-transaction, which then
    /// merges pages as a single delete would: a run of keys costs one descent and one redo record
    /// per leaf, not per key.
    pub fn delete_sorted(&self, sorted: &[Vec<u8>]) -> Result<usize> {
        let mut removed = 0;
        let mut next = 0;
        while next < sorted.len() {
            let (passed, gone) = self.delete_in_one_leaf(&sorted[next..])?;
            next += passed.max(1);
            removed += gone;
        }
        Ok(removed)
    }

    /// Removes the leading keys of `keys` that belong to the leaf of `keys[0]`; returns how many
    /// keys it passed (0 when `keys[0]` lies beyond that leaf's last key, so is absent) and how many
    /// records it removed.
    fn delete_in_one_leaf(&self, keys: &[Vec<u8>]) -> Result<(usize, usize)> {
        let mut mtr = Mtr::new(&self.pool)?;
        let threshold = self.limits.merge_threshold;
        let max_record = Page::record_footprint(self.limits.max_record);
        let path = self.latch_path(&mut mtr, &keys[0], |page| {
            survives_many_deletes(page, threshold + max_record)
        })?;
        let leaf = path.last().expect("a path ends at a leaf").handle;
        let page = Page::new(mtr.page(leaf));
        let Some(last) = page.slot_count().checked_sub(1) else {
            return Ok((0, 0));
        };
        let last_key = node::leaf_key(page.record(last));
        let passed = keys.partition_point(|key| key.as_slice() <= last_key);
        let mut previous = None;
        let slots: Vec<usize> = keys[..passed]
            .iter()
            .filter_map(|key| {
                let found = search_in_run(page, key, previous);
                previous = Some(node::found_slot(found));
                found.ok()
            })
            .collect();
        self.remove_from_leaf(mtr, &path, &slots)?;
        Ok((passed, slots.len()))
    }

    /// Removes every key in the ranges `from..=to` of `ranges` (ascending, disjoint) and returns
    /// how many there were. The keys of one leaf go in one mini-transaction, whichever ranges they
    /// belong to, found in the leaf itself: no read of the ranges beforehand, and one descent and
    /// one redo record per leaf.
    pub fn delete_ranges(&self, ranges: &[(Vec<u8>, Vec<u8>)]) -> Result<usize> {
        let mut at = ranges.first().map(|(from, _)| (0, from.clone()));
        let mut removed = 0;
        while let Some((range, from)) = at {
            let (gone, next) = self.delete_ranges_in_one_leaf(&ranges[range..], &from)?;
            removed += gone;
            at = match next {
                Some((skipped, from)) if skipped > 0 || from.is_some() => {
                    let from = from.unwrap_or_else(|| ranges[range + skipped].0.clone());
                    Some((range + skipped, from))
                }
                Some(_) => self.first_key_from(&from, &ranges[range].1, range, ranges)?,
                None => None,
            };
        }
        Ok(removed)
    }

    /// Where a range delete goes on when `from` fell between a leaf's last key and the next
    /// leaf: the first present key of the range, else the next range.
    fn first_key_from(
        &self,
        from: &[u8],
        to: &[u8],
        range: usize,
        ranges: &[(Vec<u8>, Vec<u8>)],
    ) -> Result<Option<(usize, Vec<u8>)>> {
        let first = self
            .range(Bound::Included(from), Bound::Included(to))
            .next();
        Ok(match first.transpose()? {
            Some((key, _)) => Some((range, key)),
            None => ranges
                .get(range + 1)
                .map(|(from, _)| (range + 1, from.clone())),
        })
    }

    /// Removes the keys of `ranges` (the first starting at `from` instead) that lie in the leaf of
    /// `from`; returns how many, and where to go on, if anywhere: the position in `ranges` of the
    /// range that reaches beyond the leaf, and the key to start from (None: that range's own start;
    /// `(0, None)`: `from` itself lies past the leaf's last key, in no leaf's records).
    fn delete_ranges_in_one_leaf(
        &self,
        ranges: &[(Vec<u8>, Vec<u8>)],
        from: &[u8],
    ) -> Result<RangeDeleted> {
        let mut mtr = Mtr::new(&self.pool)?;
        let threshold = self.limits.merge_threshold;
        let max_record = Page::record_footprint(self.limits.max_record);
        let path = self.latch_path(&mut mtr, from, |page| {
            survives_many_deletes(page, threshold + max_record)
        })?;
        let leaf = path.last().expect("a path ends at a leaf").handle;
        let page = Page::new(mtr.page(leaf));
        let Some(last) = page.slot_count().checked_sub(1) else {
            return Ok((0, None));
        };
        let last_key = node::leaf_key(page.record(last));
        let beyond = |key: &[u8]| key > last_key && page.next() != NO_PAGE;
        let mut slots = Vec::new();
        let mut next = None;
        for (i, (range_from, to)) in ranges.iter().enumerate() {
            let start = if i == 0 { from } else { range_from.as_slice() };
            if beyond(start) {
                next = Some((i, None));
                break;
            }
            let first = node::leaf_search(page, start).unwrap_or_else(|slot| slot);
            slots.extend(
                (first..=last)
                    .take_while(|&slot| node::leaf_key(page.record(slot)) <= to.as_slice()),
            );
            if beyond(to) {
                let mut past = last_key.to_vec();
                past.push(0);
                next = Some((i, Some(past)));
                break;
            }
        }
        self.remove_from_leaf(mtr, &path, &slots)?;
        Ok((slots.len(), next))
    }
}

/// Whether a page on the path of a delete of many keys from one leaf can take the change without
/// passing it up, so that its ancestors may be released: never the leaf itself (it may lose all
/// its records, and its parent must stay latched to merge it); a branch page if it can lose one
/// separator (a merge below removes at most one) and stay above `keep` bytes with over two
/// children.
fn survives_many_deletes(page: Page<'_>, keep: usize) -> bool {
    page.level() > 0 && page.used_space() >= keep && page.slot_count() > 2
}

/// How a run's records go into their leaf.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placing {
    Insert,
    Replace,
}

/// Writes the leading `records` (key and value) at `slots` of the latched `leaf` (inserted before,
/// or replacing, the records there; room checked by the caller) and commits; returns how many.
fn commit_run<'r>(
    mut mtr: Mtr<'_>,
    leaf: PageHandle,
    records: impl Iterator<Item = (&'r [u8], &'r [u8])>,
    slots: &[usize],
    placing: Placing,
) -> usize {
    if slots.is_empty() {
        return 0;
    }
    let mut edit = mtr.edit(leaf);
    for ((key, value), &slot) in records.zip(slots) {
        let record = node::encode_leaf(key, StoredValue::Inline(value));
        let written = match placing {
            Placing::Insert => edit.insert(slot, &record),
            Placing::Replace => edit.replace(slot, &record),
        };
        written.expect("room was checked with the leaf latched");
    }
    mtr.commit();
    slots.len()
}

/// What [`BTree::rewrite_run`] does with a present key, as its caller decides.
pub enum RunChoice<'v, T> {
    /// Replace the value with this one; the payload goes to `prepare` and back to the caller.
    Replace(Cow<'v, [u8]>, T),
    /// Leave the key as it is and go on with the run.
    Pass,
    /// End the run before this key.
    Stop,
}

/// What [`BTree::rewrite_run`] did: how many leading keys it decided (replaced or passed over),
/// and the keys it replaced — their positions in the keys, and their payloads as `prepare` left
/// them.
pub struct RunRewritten<T> {
    pub passed: usize,
    pub positions: Vec<usize>,
    pub payloads: Vec<T>,
}

impl<T> RunRewritten<T> {
    fn none() -> Self {
        RunRewritten {
            passed: 0,
            positions: Vec::new(),
            payloads: Vec::new(),
        }
    }
}

/// Searches a leaf for the next key of an ascending run: the whole leaf for the run's first key,
/// else galloping from the slot the previous key's search gave (`previous`).
fn search_in_run(
    page: Page<'_>,
    key: &[u8],
    previous: Option<usize>,
) -> std::result::Result<usize, usize> {
    match previous {
        None => node::leaf_search(page, key),
        Some(from) => node::leaf_search_from(page, key, from),
    }
}
