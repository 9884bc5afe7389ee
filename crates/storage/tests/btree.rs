//! B+tree behaviour through a buffer pool far smaller than the data.
//!
//! - `random_operations_match_a_btreemap_*` (4 KiB and 16 KiB pages): property tests that run
//!   more than 10,000 random inserts (one by one and in runs), updates, deletes (one by one, of
//!   sorted keys and of key ranges), point reads and range scans (forward and
//!   backward, bounds included, excluded or open, full or cut short) against a `BTreeMap` model.
//!   Keys are 1 B – 1 KiB (a few long ones, some sharing a long prefix), values 0 B – 64 KiB
//!   (mostly small, a few in overflow pages). Every return value and every scan equals the
//!   model's at every step; the tree verifies clean along the way and at the end, holds exactly
//!   the model, the pool evicted pages, and after a clean close the offline check is clean and a
//!   reopened tree still holds exactly the model.
//! - `runs_of_inserts_match_a_btreemap_4k`: the same against the model for a load — runs of
//!   `insert_run_if_absent` (sorted, or in any order so that runs meet keys that do not ascend),
//!   with single inserts, deletes, reads and scans between them; every run inserts only absent,
//!   ascending keys.
//! - `conditional_runs_replace_only_what_is_accepted_and_prepare_first`: `replace_run_where`
//!   replaces only the entries its condition accepts, runs its nested writes to another tree
//!   once per run with the leaf latched, and leaves the leaf untouched when they fail.
//! - `rewritten_runs_replace_pass_and_stop_as_decided`: `rewrite_run` decides each present key
//!   from its value under one latch — replaced (its payload through `prepare` and back), passed
//!   over, or the run stopped there — stops before an absent key, and leaves the leaf untouched
//!   when `decide` fails.
//! - `runs_of_ascending_keys_go_in_one_call_per_leaf`: appending ascending keys in runs takes at
//!   most two calls per leaf; filling in keys between present ones takes fewer calls than keys;
//!   a present key stops a run at once.
//! - `range_deletes_match_the_model`: `delete_ranges` of random sets of ranges (across many
//!   leaves, in gaps, single keys, past the end) removes exactly the model's keys in them, and
//!   the tree verifies clean after each call.
//! - `deleting_everything_shrinks_the_tree_back`: after a load three or more levels high,
//!   deleting nineteen keys in twenty (in random, ascending and descending order) merges most
//!   leaves away, and deleting the rest brings the tree back to one empty root leaf with no
//!   branch or overflow pages left.
//! - `oversized_keys_and_values_are_refused`: the size limits hold exactly at their edges, and
//!   entries of the largest size split and read back.
//! - `concurrent_readers_writers_and_scanners`: writer threads, each owning interleaved keys so
//!   that they share leaves, insert, update, delete, read and scan their own keys while reader
//!   threads read and scan everything, through a pool far smaller than the data, for
//!   `STEADY_BTREE_STRESS_SECS` seconds (default 10). Every return value matches the writer's
//!   own model; every scan is strictly ordered, inside its bounds, made of whole values, and
//!   misses none of the keys nobody changes; at the end the tree holds exactly the merged
//!   models and verifies clean, the offline check of the closed directory is clean, and a
//!   reopened tree still holds the merged models. The background flusher runs here (and only here),
//!   so page write-backs race with evictions too.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{RngSeed, TestCaseError};
use rand::{rngs::StdRng, seq::SliceRandom, Rng, SeedableRng};
use steady_storage::btree::{BTree, RunChoice, MAX_VALUE_LEN};
use steady_storage::check::check_directory;
use steady_storage::io::{MemVfs, OsVfs, Vfs};
use steady_storage::store::{Store, StoreConfig};
use steady_storage::StorageError;

const INDEX: u64 = 7;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

macro_rules! ensure {
    ($cond:expr, $($message:tt)+) => {
        if !$cond {
            return Err(format!($($message)+));
        }
    };
}

/// A storage error as a test failure that says what was being done.
fn err(what: &'static str) -> impl Fn(StorageError) -> String {
    move |e| format!("{what} failed: {e}")
}

/// A small deterministic generator (splitmix64), for keys and values that tests can regenerate.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// `len` pseudo-random bytes determined by `seed`: a value whose every byte can be checked.
fn filler(seed: u64, len: usize) -> Vec<u8> {
    let mut mix = Mix(seed);
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        bytes.extend_from_slice(&mix.next().to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

fn short(bytes: &[u8]) -> String {
    let head: String = bytes.iter().take(20).map(|b| format!("{b:02x}")).collect();
    let more = if bytes.len() > 20 { "…" } else { "" };
    format!("[{} B: {head}{more}]", bytes.len())
}

fn short_opt(bytes: Option<&[u8]>) -> String {
    bytes.map_or_else(|| "None".to_string(), short)
}

/// Whether `BTreeMap::range` would refuse (panic on) these bounds; such a range is empty.
fn range_is_empty(start: Bound<&[u8]>, end: Bound<&[u8]>) -> bool {
    match (start, end) {
        (Bound::Included(s), Bound::Included(e)) => s > e,
        (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) => {
            s >= e
        }
        _ => false,
    }
}

/// The model's answer to a scan: at most `limit` entries of the range, in scan order.
fn model_scan(
    model: &Model,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    reverse: bool,
    limit: usize,
) -> Entries {
    if range_is_empty(start, end) {
        return Vec::new();
    }
    let range = model.range::<[u8], _>((start, end));
    let cloned = |(k, v): (&Vec<u8>, &Vec<u8>)| (k.clone(), v.clone());
    if reverse {
        range.rev().take(limit).map(cloned).collect()
    } else {
        range.take(limit).map(cloned).collect()
    }
}

/// At most `limit` entries of a tree scan, in the order the tree returns them.
fn tree_scan(
    tree: &BTree,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    reverse: bool,
    limit: usize,
) -> Result<Entries, StorageError> {
    let iter = if reverse {
        tree.range_rev(start, end)
    } else {
        tree.range(start, end)
    };
    iter.take(limit).collect()
}

fn full_content(tree: &BTree) -> Result<Entries, String> {
    tree_scan(tree, Bound::Unbounded, Bound::Unbounded, false, usize::MAX).map_err(err("full scan"))
}

/// Compares two entry lists and names the first difference.
fn same_entries(what: &str, found: &Entries, expected: &Entries) -> Result<(), String> {
    let at = found.iter().zip(expected).position(|(f, e)| f != e);
    match at {
        None if found.len() == expected.len() => Ok(()),
        None => Err(format!(
            "{what}: {} entries, expected {}; first extra {} / first missing {}",
            found.len(),
            expected.len(),
            short_opt(found.get(expected.len()).map(|(k, _)| k.as_slice())),
            short_opt(expected.get(found.len()).map(|(k, _)| k.as_slice())),
        )),
        Some(i) => Err(format!(
            "{what}: entry {i} of {} (expected {}) is key {} value {}, expected key {} value {}",
            found.len(),
            expected.len(),
            short(&found[i].0),
            short(&found[i].1),
            short(&expected[i].0),
            short(&expected[i].1),
        )),
    }
}

fn model_entries(model: &Model) -> Entries {
    model.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Pages of each kind a (quiescent) tree is made of.
#[derive(Debug, PartialEq, Eq)]
struct Shape {
    height: usize,
    leaf_pages: usize,
    branch_pages: usize,
    overflow_pages: usize,
}

/// Verifies the tree (no problems, no page reached twice) and returns its shape: the levels, leaves
/// and branches `stats` counts, and as overflow pages the other pages `verify` reaches.
fn verify_clean(tree: &BTree) -> Result<Shape, String> {
    let verified = tree.verify().map_err(err("verify"))?;
    ensure!(
        verified.problems.is_empty(),
        "verify found problems: {:?}",
        verified.problems
    );
    let mut pages = verified.pages.clone();
    pages.sort_unstable();
    pages.dedup();
    ensure!(
        pages.len() == verified.pages.len(),
        "verify reached a page twice"
    );
    let stats = tree.stats().map_err(err("stats"))?;
    let overflow_pages = pages
        .len()
        .checked_sub(stats.leaf_pages + stats.branch_pages)
        .ok_or_else(|| format!("verify reached {} pages, fewer than {stats:?}", pages.len()))?;
    Ok(Shape {
        height: stats.height,
        leaf_pages: stats.leaf_pages,
        branch_pages: stats.branch_pages,
        overflow_pages,
    })
}

fn check_clean(vfs: &dyn Vfs) -> Result<(), String> {
    let report = check_directory(vfs, &mut |_| {}).map_err(err("check_directory"))?;
    ensure!(
        report.problems.is_empty(),
        "offline check found problems: {:?}",
        report.problems
    );
    Ok(())
}

/// A store of `frames` pages of `page_size`, with a small redo log (so checkpoints happen during
/// the tests) and no background flusher: single-threaded tests then do the same I/O on every run,
/// so a failing case replays exactly. The concurrency test turns the flusher on.
fn store_config(page_size: usize, frames: usize) -> StoreConfig {
    StoreConfig {
        page_size,
        buffer_pool_bytes: frames * page_size,
        log_capacity: 16 << 20,
        background_flush: false,
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Random operations against a model
// ---------------------------------------------------------------------------------------------

/// Number of distinct keys the random operations draw from, so that updates and deletes hit.
const KEY_POOL: usize = 2000;

/// Bytes keys are made of: shared prefixes are common, and 0x00 / 0xff test unsigned comparison.
const ALPHABET: &[u8] = &[0x00, 0x01, b'a', b'b', 0x7f, 0x80, 0xfe, 0xff];

/// The key pool: mostly 1–12 byte keys, one in sixteen 200 B – 1 KiB (some exactly 1 KiB, some
/// sharing a long prefix so that they differ only at the end).
fn key_pool() -> Vec<Vec<u8>> {
    (0..KEY_POOL as u64)
        .map(|i| {
            let mut mix = Mix(i);
            let mut random = |len: usize| -> Vec<u8> {
                (0..len)
                    .map(|_| ALPHABET[mix.below(ALPHABET.len())])
                    .collect()
            };
            match i % 64 {
                0 => [vec![b'P'; 1016], random(8)].concat(),
                1 => {
                    let len = 200 + (i as usize * 7919) % 800;
                    [vec![b'Q'; len], random(6)].concat()
                }
                2 | 3 => {
                    let len = 200 + (i as usize * 104_729) % 825;
                    random(len)
                }
                _ => {
                    let len = 1 + (i as usize % 12);
                    random(len)
                }
            }
        })
        .collect()
}

#[derive(Debug, Clone)]
struct ValueSpec {
    len: usize,
    seed: u64,
}

impl ValueSpec {
    fn bytes(&self) -> Vec<u8> {
        filler(self.seed ^ ((self.len as u64) << 8), self.len)
    }
}

/// A scan bound: a pool key, or a few arbitrary bytes (possibly empty) that may fall between keys.
#[derive(Debug, Clone)]
enum Probe {
    Pool(usize),
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone)]
enum Edge {
    Unbounded,
    Included(Probe),
    Excluded(Probe),
}

impl Edge {
    fn bound(&self, keys: &[Vec<u8>]) -> Bound<Vec<u8>> {
        let key = |probe: &Probe| match probe {
            Probe::Pool(i) => keys[*i].clone(),
            Probe::Bytes(bytes) => bytes.clone(),
        };
        match self {
            Edge::Unbounded => Bound::Unbounded,
            Edge::Included(probe) => Bound::Included(key(probe)),
            Edge::Excluded(probe) => Bound::Excluded(key(probe)),
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert {
        key: usize,
        value: ValueSpec,
    },
    InsertIfAbsent {
        key: usize,
        value: ValueSpec,
    },
    Delete(usize),
    /// `delete_sorted` of a set of pool keys (sorted and deduplicated when applied).
    DeleteSorted(Vec<usize>),
    /// `delete_ranges` over pool keys taken two by two (sorted and deduplicated when applied).
    DeleteRanges(Vec<usize>),
    /// `insert_run_if_absent` of pool keys, sorted and deduplicated when `sorted` (else in the
    /// order given, so runs also meet keys that do not ascend).
    InsertRun {
        keys: Vec<usize>,
        value: ValueSpec,
        sorted: bool,
    },
    /// `replace_run` of pool keys (sorted and deduplicated when `sorted`), present or not.
    ReplaceRun {
        keys: Vec<usize>,
        value: ValueSpec,
        sorted: bool,
    },
    /// `get_many` of pool keys (sorted and deduplicated when applied).
    GetMany(Vec<usize>),
    Get(usize),
    Scan {
        start: Edge,
        end: Edge,
        reverse: bool,
        limit: usize,
    },
}

fn value_spec() -> impl Strategy<Value = ValueSpec> {
    let len = prop_oneof![
        85 => 0..=64usize,
        12 => 65..=2000usize,
        2 => 2001..=MAX_VALUE_LEN,
        1 => Just(MAX_VALUE_LEN),
    ];
    (len, any::<u8>()).prop_map(|(len, seed)| ValueSpec {
        len,
        seed: seed.into(),
    })
}

fn edge() -> impl Strategy<Value = Edge> {
    let probe = prop_oneof![
        4 => (0..KEY_POOL).prop_map(Probe::Pool),
        1 => prop::collection::vec(prop::sample::select(ALPHABET), 0..4).prop_map(Probe::Bytes),
    ];
    prop_oneof![
        1 => Just(Edge::Unbounded),
        2 => probe.clone().prop_map(Edge::Included),
        2 => probe.prop_map(Edge::Excluded),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let limit = prop_oneof![9 => 1..64usize, 1 => Just(usize::MAX)];
    prop_oneof![
        50 => (0..KEY_POOL, value_spec()).prop_map(|(key, value)| Op::Insert { key, value }),
        20 => (0..KEY_POOL).prop_map(Op::Delete),
        5 => (0..KEY_POOL, value_spec()).prop_map(|(key, value)| Op::InsertIfAbsent { key, value }),
        3 => prop::collection::vec(0..KEY_POOL, 0..200).prop_map(Op::DeleteSorted),
        3 => (prop::collection::vec(0..KEY_POOL, 0..200), value_spec(), any::<bool>())
            .prop_map(|(keys, value, sorted)| Op::InsertRun { keys, value, sorted }),
        2 => prop::collection::vec(0..KEY_POOL, 0..12).prop_map(Op::DeleteRanges),
        3 => (prop::collection::vec(0..KEY_POOL, 0..200), value_spec(), any::<bool>())
            .prop_map(|(keys, value, sorted)| Op::ReplaceRun { keys, value, sorted }),
        3 => prop::collection::vec(0..KEY_POOL, 0..200).prop_map(Op::GetMany),
        20 => (0..KEY_POOL).prop_map(Op::Get),
        10 => (edge(), edge(), any::<bool>(), limit).prop_map(|(start, end, reverse, limit)| {
            Op::Scan { start, end, reverse, limit }
        }),
    ]
}

/// The operations of a load: runs (mostly sorted), single inserts and deletes, reads and scans.
fn load_op() -> impl Strategy<Value = Op> {
    let run = (
        prop::collection::vec(0..KEY_POOL, 0..200),
        value_spec(),
        0..4u8,
    );
    prop_oneof![
        30 => run.prop_map(|(keys, value, order)| Op::InsertRun { keys, value, sorted: order > 0 }),
        30 => (0..KEY_POOL, value_spec()).prop_map(|(key, value)| Op::InsertIfAbsent { key, value }),
        10 => (0..KEY_POOL).prop_map(Op::Delete),
        20 => (0..KEY_POOL).prop_map(Op::Get),
        10 => (edge(), edge(), any::<bool>()).prop_map(|(start, end, reverse)| {
            Op::Scan { start, end, reverse, limit: usize::MAX }
        }),
    ]
}

/// Inserts that come before the random operations: `4 * frames` values of a page each, so that the
/// data outgrows the pool whatever the random operations are (also once proptest shrinks them).
fn prefill(page_size: usize, frames: usize) -> impl Iterator<Item = Op> {
    (0..frames * 4).map(move |n| Op::Insert {
        key: n * 7 % KEY_POOL,
        value: ValueSpec {
            len: page_size,
            seed: n as u64,
        },
    })
}

/// Applies one operation to the tree and the model and compares what they return.
fn apply(tree: &BTree, model: &mut Model, keys: &[Vec<u8>], op: &Op) -> Result<(), String> {
    match op {
        Op::Insert { key, value } => {
            let (key, value) = (&keys[*key], value.bytes());
            let old = tree.insert(key, &value).map_err(err("insert"))?;
            let expected = model.insert(key.clone(), value);
            ensure!(
                old == expected,
                "insert of {} returned {}, expected {}",
                short(key),
                short_opt(old.as_deref()),
                short_opt(expected.as_deref())
            );
        }
        Op::Delete(key) => {
            let key = &keys[*key];
            let old = tree.delete(key).map_err(err("delete"))?;
            let expected = model.remove(key);
            ensure!(
                old == expected,
                "delete of {} returned {}, expected {}",
                short(key),
                short_opt(old.as_deref()),
                short_opt(expected.as_deref())
            );
        }
        Op::InsertIfAbsent { key, value } => {
            let (key, value) = (&keys[*key], value.bytes());
            let inserted = tree
                .insert_if_absent(key, &value)
                .map_err(err("insert_if_absent"))?;
            let absent = !model.contains_key(key);
            if absent {
                model.insert(key.clone(), value);
            }
            ensure!(
                inserted == absent,
                "insert_if_absent of {} returned {inserted}",
                short(key)
            );
        }
        Op::DeleteSorted(picked) => {
            let sorted = picked_keys(keys, picked, true);
            let removed = tree.delete_sorted(&sorted).map_err(err("delete_sorted"))?;
            let expected = sorted
                .iter()
                .filter(|key| model.remove(*key).is_some())
                .count();
            ensure!(
                removed == expected,
                "delete_sorted of {} keys removed {removed}, expected {expected}",
                sorted.len()
            );
        }
        Op::DeleteRanges(picked) => {
            let bounds = picked_keys(keys, picked, true);
            let ranges: Entries = bounds
                .chunks_exact(2)
                .map(|pair| (pair[0].clone(), pair[1].clone()))
                .collect();
            let removed = tree.delete_ranges(&ranges).map_err(err("delete_ranges"))?;
            let expected = remove_ranges(model, &ranges);
            ensure!(
                removed == expected,
                "delete_ranges of {} ranges removed {removed}, expected {expected}",
                ranges.len()
            );
        }
        Op::InsertRun {
            keys: picked,
            value,
            sorted,
        } => {
            let run = picked_keys(keys, picked, *sorted);
            let entries: Entries = run.into_iter().map(|key| (key, value.bytes())).collect();
            let inserted = tree
                .insert_run_if_absent(&entries)
                .map_err(err("insert_run_if_absent"))?;
            check_run(model, &entries[..inserted])?;
        }
        Op::ReplaceRun {
            keys: picked,
            value,
            sorted,
        } => {
            let run = picked_keys(keys, picked, *sorted);
            let entries: Entries = run.into_iter().map(|key| (key, value.bytes())).collect();
            let replaced = tree.replace_run(&entries).map_err(err("replace_run"))?;
            for (key, value) in &entries[..replaced] {
                let old = model.insert(key.clone(), value.clone());
                ensure!(old.is_some(), "replace_run wrote absent key {}", short(key));
            }
        }
        Op::GetMany(picked) => {
            let sorted = picked_keys(keys, picked, true);
            let found = tree.get_many(&sorted).map_err(err("get_many"))?;
            let expected: Vec<Option<Vec<u8>>> =
                sorted.iter().map(|key| model.get(key).cloned()).collect();
            ensure!(
                found == expected,
                "get_many of {} keys differs from the model",
                sorted.len()
            );
        }
        Op::Get(key) => {
            let key = &keys[*key];
            let found = tree.get(key).map_err(err("get"))?;
            let expected = model.get(key);
            ensure!(
                found.as_ref() == expected,
                "get of {} returned {}, expected {}",
                short(key),
                short_opt(found.as_deref()),
                short_opt(expected.map(Vec::as_slice))
            );
        }
        Op::Scan {
            start,
            end,
            reverse,
            limit,
        } => {
            let (start, end) = (start.bound(keys), end.bound(keys));
            let (start, end) = (
                start.as_ref().map(Vec::as_slice),
                end.as_ref().map(Vec::as_slice),
            );
            let found = tree_scan(tree, start, end, *reverse, *limit).map_err(err("scan"))?;
            let expected = model_scan(model, start, end, *reverse, *limit);
            same_entries("scan", &found, &expected)?;
        }
    }
    Ok(())
}

/// The pool keys at `picked`, sorted and deduplicated when `sorted` (else in the order given).
fn picked_keys(keys: &[Vec<u8>], picked: &[usize], sorted: bool) -> Vec<Vec<u8>> {
    let mut chosen: Vec<Vec<u8>> = picked.iter().map(|i| keys[*i].clone()).collect();
    if sorted {
        chosen.sort();
        chosen.dedup();
    }
    chosen
}

/// Removes the keys of `ranges` (`from..=to`) from the model; returns how many there were.
fn remove_ranges(model: &mut Model, ranges: &[(Vec<u8>, Vec<u8>)]) -> usize {
    let mut removed = 0;
    for (from, to) in ranges {
        let doomed: Vec<Vec<u8>> = model
            .range(from.clone()..=to.clone())
            .map(|(k, _)| k.clone())
            .collect();
        removed += doomed.len();
        for key in doomed {
            model.remove(&key);
        }
    }
    removed
}

/// Checks that the entries a run inserted ascend and were absent, and adds them to the model.
fn check_run(model: &mut Model, inserted: &[(Vec<u8>, Vec<u8>)]) -> Result<(), String> {
    ensure!(
        inserted.windows(2).all(|w| w[0].0 < w[1].0),
        "a run of {} inserted keys that do not ascend",
        inserted.len()
    );
    for (key, value) in inserted {
        ensure!(
            model.insert(key.clone(), value.clone()).is_none(),
            "a run inserted the present key {}",
            short(key)
        );
    }
    Ok(())
}

/// Runs `ops` (after the prefill) on a fresh tree, then checks it, closes, checks the directory,
/// reopens and checks again.
fn run_case(page_size: usize, frames: usize, ops: &[Op]) -> Result<(), String> {
    let keys = key_pool();
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let config = store_config(page_size, frames);
    let store = Store::open(vfs.clone(), &config).map_err(err("open"))?;
    let space = store.create_space().map_err(err("create_space"))?;
    let space_id = space.id();
    let tree = BTree::create(store.pool().clone(), space, INDEX).map_err(err("create"))?;
    ensure!(
        tree.max_key_len() >= 1024,
        "max_key_len {} < 1024",
        tree.max_key_len()
    );
    let mut model = Model::new();
    let all: Vec<Op> = prefill(page_size, frames)
        .chain(ops.iter().cloned())
        .collect();
    for (step, op) in all.iter().enumerate() {
        apply(&tree, &mut model, &keys, op).map_err(|e| format!("step {step} {op:?}: {e}"))?;
        if step % 2500 == 2499 {
            verify_clean(&tree).map_err(|e| format!("after step {step}: {e}"))?;
        }
    }

    let shape = verify_clean(&tree)?;
    let expected = model_entries(&model);
    same_entries("full content", &full_content(&tree)?, &expected)?;
    let mut backward = tree_scan(&tree, Bound::Unbounded, Bound::Unbounded, true, usize::MAX)
        .map_err(err("full reverse scan"))?;
    backward.reverse();
    same_entries("full reverse content", &backward, &expected)?;
    ensure!(
        shape.overflow_pages > 0 || model.values().all(|v| v.len() < page_size),
        "values larger than a page but no overflow pages: {shape:?}"
    );
    let evictions = store.pool_stats().evictions;
    ensure!(evictions > 0, "the pool never evicted a page");

    drop(tree);
    store.close().map_err(err("close"))?;
    check_clean(vfs.as_ref())?;
    let store = Store::open(vfs.clone(), &config).map_err(err("reopen"))?;
    let space = store
        .space(space_id)
        .ok_or("the reopened store lost the space")?;
    let tree = BTree::open(store.pool().clone(), space, INDEX).map_err(err("open tree"))?;
    same_entries("content after reopen", &full_content(&tree)?, &expected)?;
    verify_clean(&tree)?;
    drop(tree);
    store.close().map_err(err("close after reopen"))
}

fn proptest_config(cases: u32, seed: u64) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: 200,
        max_shrink_time: 120_000,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(proptest_config(16, 0x5EED_0004))]
    #[test]
    fn random_operations_match_a_btreemap_4k(ops in prop::collection::vec(op(), 10_000..=11_000)) {
        run_case(4096, 32, &ops).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(proptest_config(8, 0x5EED_0100))]
    #[test]
    fn runs_of_inserts_match_a_btreemap_4k(ops in prop::collection::vec(load_op(), 2_000..=2_500)) {
        run_case(4096, 32, &ops).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(proptest_config(16, 0x5EED_0016))]
    #[test]
    fn random_operations_match_a_btreemap_16k(ops in prop::collection::vec(op(), 10_000..=11_000)) {
        run_case(16384, 16, &ops).map_err(TestCaseError::fail)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Merges
// ---------------------------------------------------------------------------------------------

/// The value of row `i` in load `round`: 100 B, every 97th 6000 B (overflow), every 997th 64 KiB.
fn load_value(i: usize, round: usize) -> Vec<u8> {
    let len = if i.is_multiple_of(997) {
        MAX_VALUE_LEN
    } else if i.is_multiple_of(97) {
        6000
    } else {
        100
    };
    filler((i * 3 + round) as u64, len)
}

/// Loads keys in runs as a bulk insert does: ascending keys appended past the end, then keys
/// between them, each run handed to `insert_run_if_absent` until it stops and the entry it
/// stopped at inserted on its own. Appending costs one call per leaf, not per key; the tree
/// holds exactly what was loaded and verifies clean.
/// A new tree in an in-memory store of 4 KiB pages and a 64-frame pool (the store is returned to
/// be kept alive beside the tree).
fn small_tree() -> Result<(Store, BTree), String> {
    let store =
        Store::open(Arc::new(MemVfs::new()), &store_config(4096, 64)).map_err(err("open"))?;
    let space = store.create_space().map_err(err("create_space"))?;
    let tree = BTree::create(store.pool().clone(), space, INDEX).map_err(err("create"))?;
    Ok((store, tree))
}

/// Replacing every tenth of 20,000 present keys (as UPDATE and DELETE write locked rows) and
/// reading them back each take about one call and one descent per leaf, not per key; a key that
/// is absent ends a replace run.
#[test]
fn replacing_and_reading_runs_of_present_keys_go_a_leaf_at_a_time() -> Result<(), String> {
    let (_store, tree) = small_tree()?;
    let key = |k: u64| k.to_be_bytes().to_vec();
    let mut at = 0;
    let entries: Entries = (0..20_000).map(|k| (key(k), filler(k, 40))).collect();
    while at < entries.len() {
        let inserted = tree
            .insert_run_if_absent(&entries[at..])
            .map_err(err("insert_run_if_absent"))?;
        if inserted == 0 {
            tree.insert(&entries[at].0, &entries[at].1)
                .map_err(err("insert"))?;
        }
        at += inserted.max(1);
    }
    let leaves = verify_clean(&tree)?.leaf_pages;
    let tenth: Entries = (0..2_000).map(|k| (key(k * 10), filler(k, 9))).collect();
    let (mut calls, mut at) = (0, 0);
    while at < tenth.len() {
        calls += 1;
        let replaced = tree.replace_run(&tenth[at..]).map_err(err("replace_run"))?;
        ensure!(replaced > 0, "a run of present keys replaced nothing");
        at += replaced;
    }
    ensure!(
        calls <= leaves + 1,
        "replacing 2,000 keys took {calls} calls for {leaves} leaves"
    );
    let keys: Vec<Vec<u8>> = tenth.iter().map(|(k, _)| k.clone()).collect();
    let found = tree.get_many(&keys).map_err(err("get_many"))?;
    let expected: Vec<Option<Vec<u8>>> = tenth.iter().map(|(_, v)| Some(v.clone())).collect();
    ensure!(
        found == expected,
        "get_many did not read the replaced values"
    );
    let gap: Entries = vec![
        (key(10), vec![1]),
        (key(20_001), vec![2]),
        (key(30), vec![3]),
    ];
    let replaced = tree.replace_run(&gap).map_err(err("replace_run"))?;
    ensure!(
        replaced == 1,
        "a run over an absent key replaced {replaced}, expected 1"
    );
    verify_clean(&tree)?;
    Ok(())
}

/// `replace_run_where` replaces only what `accept` lets through (a refused first entry is not
/// replaced, a refused later one ends the run), runs `prepare` once per run with the count about
/// to be replaced while the leaf is latched — its writes to another tree of the same pool are
/// nested mini-transactions, and land — and a failing `prepare` leaves the leaf as it was.
#[test]
fn conditional_runs_replace_only_what_is_accepted_and_prepare_first() -> Result<(), String> {
    let (store, tree) = small_tree()?;
    let space = store.create_space().map_err(err("create_space"))?;
    let side = BTree::create(store.pool().clone(), space, INDEX + 1).map_err(err("create"))?;
    let key = |k: u64| k.to_be_bytes().to_vec();
    for k in 0..10 {
        tree.insert(&key(k), &[k as u8]).map_err(err("insert"))?;
    }
    let run: Entries = (0..10).map(|k| (key(k), vec![100 + k as u8])).collect();
    let accept = |_: usize, present: &[u8]| present[0] != 3 && present[0] != 6;
    let (mut at, mut prepared) = (0, Vec::new());
    while at < run.len() {
        let replaced = tree
            .replace_run_where(&run[at..], accept, |count| {
                prepared.push((at, count));
                side.insert(&key(at as u64), &[count as u8])?;
                Ok::<(), StorageError>(())
            })
            .map_err(err("replace_run_where"))?;
        at += replaced.max(1);
    }
    ensure!(
        prepared == vec![(0, 3), (4, 2), (7, 3)],
        "prepare saw runs {prepared:?}"
    );
    for k in 0..10u64 {
        let expected = if k == 3 || k == 6 {
            k as u8
        } else {
            100 + k as u8
        };
        let found = tree.get(&key(k)).map_err(err("get"))?;
        ensure!(found == Some(vec![expected]), "key {k} holds {found:?}");
    }
    for (start, count) in &prepared {
        let found = side.get(&key(*start as u64)).map_err(err("get"))?;
        ensure!(
            found == Some(vec![*count as u8]),
            "the nested write of run {start} is {found:?}"
        );
    }
    let failed = tree.replace_run_where(
        &run,
        |_, _| true,
        |_| Err(StorageError::Config("prepare failed".into())),
    );
    ensure!(failed.is_err(), "a failing prepare did not fail the run");
    ensure!(
        tree.get(&key(0)).map_err(err("get"))? == Some(vec![100]),
        "a failing prepare changed the leaf"
    );
    verify_clean(&tree)?;
    verify_clean(&side)?;
    Ok(())
}

#[test]
fn rewritten_runs_replace_pass_and_stop_as_decided() -> Result<(), String> {
    let (_store, tree) = small_tree()?;
    let key = |k: u64| k.to_be_bytes().to_vec();
    for k in 0..10 {
        tree.insert(&key(k), &[k as u8]).map_err(err("insert"))?;
    }
    // Multiples of 3 are replaced (payload: the key), 7 stops the run, the others are passed.
    let decide = |_: usize, present: &[u8]| {
        Ok::<_, StorageError>(match present[0] {
            7 => RunChoice::Stop,
            v if v % 3 == 0 => RunChoice::Replace(Cow::Owned(vec![200 + v]), u64::from(v)),
            _ => RunChoice::Pass,
        })
    };
    let keys: Vec<Vec<u8>> = (0..10).map(key).collect();
    let (mut at, mut runs) = (0, Vec::new());
    while at < keys.len() {
        let done = tree
            .rewrite_run(keys[at..].iter().map(Vec::as_slice), decide, |payloads| {
                payloads.iter_mut().for_each(|p| *p += 1000);
                Ok(())
            })
            .map_err(err("rewrite_run"))?;
        runs.push((at, done.passed, done.positions, done.payloads));
        at += done.passed.max(1);
    }
    let expected = vec![
        (0, 7, vec![0, 3, 6], vec![1000, 1003, 1006]),
        (7, 0, vec![], vec![]),
        (8, 2, vec![1], vec![1009]),
    ];
    ensure!(runs == expected, "runs {runs:?}, expected {expected:?}");
    for k in 0..10u64 {
        let expected = if k % 3 == 0 { 200 + k as u8 } else { k as u8 };
        let found = tree.get(&key(k)).map_err(err("get"))?;
        ensure!(found == Some(vec![expected]), "key {k} holds {found:?}");
    }
    let with_absent = [key(1), key(2), key(15), key(3)];
    let done = tree
        .rewrite_run(with_absent.iter().map(Vec::as_slice), decide, |_| Ok(()))
        .map_err(err("rewrite_run"))?;
    ensure!(
        done.passed == 2,
        "a run over an absent key passed {}",
        done.passed
    );
    let failing = |_: usize, _: &[u8]| -> Result<RunChoice<'static, ()>, StorageError> {
        Err(StorageError::Config("decide failed".into()))
    };
    let failed = tree.rewrite_run(keys.iter().map(Vec::as_slice), failing, |_| Ok(()));
    ensure!(failed.is_err(), "a failing decide did not fail the run");
    let mut replaced_then_failed = 0;
    let fails_second = |at: usize, _: &[u8]| {
        replaced_then_failed += 1;
        match at {
            0 => Ok(RunChoice::Replace(Cow::Owned(vec![99]), ())),
            _ => Err(StorageError::Config("decide failed".into())),
        }
    };
    let failed = tree.rewrite_run(keys.iter().map(Vec::as_slice), fails_second, |_| Ok(()));
    ensure!(
        failed.is_err() && replaced_then_failed == 2,
        "the second decision did not fail"
    );
    ensure!(
        tree.get(&key(0)).map_err(err("get"))? == Some(vec![200]),
        "a failing decide changed the leaf"
    );
    verify_clean(&tree)?;
    Ok(())
}

#[test]
fn runs_of_ascending_keys_go_in_one_call_per_leaf() -> Result<(), String> {
    let (_store, tree) = small_tree()?;
    let mut model = Model::new();
    let load = |keys: Vec<u64>, model: &mut Model| -> Result<usize, String> {
        let entries: Entries = keys
            .iter()
            .map(|k| (k.to_be_bytes().to_vec(), filler(*k, 40)))
            .collect();
        let mut calls = 0;
        let mut at = 0;
        while at < entries.len() {
            calls += 1;
            let inserted = tree
                .insert_run_if_absent(&entries[at..])
                .map_err(err("insert_run_if_absent"))?;
            check_run(model, &entries[at..at + inserted])?;
            at += inserted;
            if inserted == 0 {
                let (key, value) = &entries[at];
                let absent = tree
                    .insert_if_absent(key, value)
                    .map_err(err("insert_if_absent"))?;
                ensure!(
                    absent != model.contains_key(key),
                    "insert_if_absent of {} after a run stopped returned {absent}",
                    short(key)
                );
                model.entry(key.clone()).or_insert_with(|| value.clone());
                at += 1;
            }
        }
        Ok(calls)
    };
    let appended = load((0..20_000).map(|k| k * 2).collect(), &mut model)?;
    let leaves = verify_clean(&tree)?.leaf_pages;
    ensure!(
        appended <= 2 * leaves + 1,
        "appending 20,000 keys took {appended} calls for {leaves} leaves"
    );
    let between = load((0..20_000).map(|k| k * 2 + 1).collect(), &mut model)?;
    ensure!(
        between < 20_000,
        "filling in 20,000 keys between present ones took a call per key"
    );
    let again = load(vec![10, 12, 14], &mut model)?;
    ensure!(
        again == 3,
        "present keys each took {again} calls, expected one each"
    );
    let too_long = vec![7u8; tree.max_key_len() + 1];
    let entries: Entries = vec![
        (vec![6], vec![1]),
        (too_long.clone(), vec![1]),
        (vec![8], vec![1]),
    ];
    let inserted = tree
        .insert_run_if_absent(&entries)
        .map_err(err("insert_run_if_absent"))?;
    ensure!(
        inserted == 1,
        "a run over a key too long inserted {inserted}, expected 1"
    );
    check_run(&mut model, &entries[..1])?;
    ensure!(
        matches!(
            tree.insert_if_absent(&too_long, &[1]),
            Err(StorageError::KeyTooLarge { .. })
        ),
        "the key too long was not refused on its own"
    );
    verify_clean(&tree)?;
    same_entries("content", &full_content(&tree)?, &model_entries(&model))
}

/// `delete_ranges` against the model: ranges that span many leaves, lie in gaps between keys,
/// hold one key, run past the last key or hold nothing; the tree verifies clean after each call,
/// and deleting one range over everything leaves an empty tree.
#[test]
fn range_deletes_match_the_model() -> Result<(), String> {
    let (_store, tree) = small_tree()?;
    let mut model = Model::new();
    let key = |k: u64| (k * 3).to_be_bytes().to_vec();
    for k in 0..30_000u64 {
        let value = filler(k, 20 + (k % 7) as usize * 10);
        tree.insert(&key(k), &value).map_err(err("insert"))?;
        model.insert(key(k), value);
    }
    let mut rng = StdRng::seed_from_u64(33);
    for round in 0..40 {
        let mut bounds: Vec<u64> = (0..2 * rng.gen_range(1..12))
            .map(|_| rng.gen_range(0..95_000))
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        let ranges: Entries = bounds
            .chunks_exact(2)
            .map(|pair| {
                (
                    pair[0].to_be_bytes().to_vec(),
                    pair[1].to_be_bytes().to_vec(),
                )
            })
            .collect();
        let removed = tree.delete_ranges(&ranges).map_err(err("delete_ranges"))?;
        let expected = remove_ranges(&mut model, &ranges);
        ensure!(
            removed == expected,
            "round {round}: delete_ranges removed {removed}, expected {expected}"
        );
        verify_clean(&tree).map_err(|e| format!("round {round}: {e}"))?;
        same_entries("content", &full_content(&tree)?, &model_entries(&model))?;
    }
    let all = vec![(vec![], vec![0xff; 9])];
    let removed = tree.delete_ranges(&all).map_err(err("delete_ranges"))?;
    ensure!(
        removed == model.len(),
        "deleting everything removed {removed} of {}",
        model.len()
    );
    ensure!(full_content(&tree)?.is_empty(), "the tree is not empty");
    verify_clean(&tree).map(drop)
}

#[test]
fn deleting_everything_shrinks_the_tree_back() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let store = Store::open(vfs.clone(), &store_config(4096, 32)).unwrap();
    let tree = BTree::create(store.pool().clone(), store.create_space().unwrap(), INDEX).unwrap();
    let rows = 20_000;
    let keys: Vec<Vec<u8>> = (0..rows)
        .map(|i| format!("row{i:08}").into_bytes())
        .collect();
    let mut rng = StdRng::seed_from_u64(20);
    for (round, order) in ["random", "ascending", "descending"]
        .into_iter()
        .enumerate()
    {
        let mut load: Vec<usize> = (0..rows).collect();
        load.shuffle(&mut rng);
        for &i in &load {
            assert_eq!(tree.insert(&keys[i], &load_value(i, round)).unwrap(), None);
        }
        let grown = verify_clean(&tree).unwrap();
        assert!(
            grown.height >= 3,
            "{order}: a load this size is 3+ levels: {grown:?}"
        );
        assert!(grown.overflow_pages > 0, "{order}: {grown:?}");

        let mut deletes: Vec<usize> = (0..rows).collect();
        match order {
            "random" => deletes.shuffle(&mut rng),
            "descending" => deletes.reverse(),
            _ => {}
        }
        let (kept, doomed): (Vec<usize>, Vec<usize>) =
            deletes.into_iter().partition(|i| i.is_multiple_of(20));
        for &i in &doomed {
            assert_eq!(tree.delete(&keys[i]).unwrap(), Some(load_value(i, round)));
        }
        let thinned = verify_clean(&tree).unwrap();
        assert!(
            thinned.leaf_pages * 3 <= grown.leaf_pages,
            "{order}: deleting 95% of the keys left {} of {} leaves (no merges?)",
            thinned.leaf_pages,
            grown.leaf_pages
        );
        let expected: Entries = (0..rows)
            .step_by(20)
            .map(|i| (keys[i].clone(), load_value(i, round)))
            .collect();
        same_entries(order, &full_content(&tree).unwrap(), &expected).unwrap();

        for &i in &kept {
            assert_eq!(tree.delete(&keys[i]).unwrap(), Some(load_value(i, round)));
        }
        assert_eq!(
            verify_clean(&tree).unwrap(),
            Shape {
                height: 1,
                leaf_pages: 1,
                branch_pages: 0,
                overflow_pages: 0
            },
            "{order}: an emptied tree is one root leaf"
        );
        assert!(full_content(&tree).unwrap().is_empty());
    }
    assert!(store.pool_stats().evictions > 0);
    drop(tree);
    store.close().unwrap();
    check_clean(vfs.as_ref()).unwrap();
}

#[test]
fn oversized_keys_and_values_are_refused() {
    for page_size in [4096, 16384] {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let store = Store::open(vfs.clone(), &store_config(page_size, 64)).unwrap();
        let tree =
            BTree::create(store.pool().clone(), store.create_space().unwrap(), INDEX).unwrap();
        let limit = tree.max_key_len();
        assert!(limit >= 1024, "{page_size}: max_key_len {limit}");
        assert!(tree.insert(&vec![b'k'; limit + 1], b"v").is_err());
        assert!(tree.insert(b"k", &vec![1; MAX_VALUE_LEN + 1]).is_err());
        assert!(
            full_content(&tree).unwrap().is_empty(),
            "{page_size}: a refused insert left data"
        );

        // Many keys of the largest size, differing only in their last byte, each with the largest
        // value: leaves and branches split holding the fewest entries they can.
        let mut model = Model::new();
        for i in 0..40u8 {
            let key = [vec![b'k'; limit - 1], vec![i.wrapping_mul(97)]].concat();
            let value = filler(i.into(), MAX_VALUE_LEN);
            assert_eq!(tree.insert(&key, &value).unwrap(), None);
            model.insert(key, value);
        }
        for (key, value) in &model {
            assert_eq!(tree.get(key).unwrap().as_ref(), Some(value));
        }
        same_entries(
            "largest entries",
            &full_content(&tree).unwrap(),
            &model_entries(&model),
        )
        .unwrap();
        assert!(verify_clean(&tree).unwrap().height >= 2);
        drop(tree);
        store.close().unwrap();
        check_clean(vfs.as_ref()).unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------------

const WRITERS: usize = 4;
const READERS: usize = 2;
/// Key ids per writer; ids divisible by 10 are "stable" keys, written before the threads start and
/// never changed, so that any scan can tell whether it missed one.
const IDS: usize = 4000;

/// Writer `thread`'s key `id`. Keys of all writers interleave, so writers share leaves.
fn stress_key(id: usize, thread: usize) -> Vec<u8> {
    format!("{id:06}-{thread}").into_bytes()
}

fn parse_stress_key(key: &[u8]) -> Option<(usize, usize)> {
    let text = std::str::from_utf8(key).ok()?;
    let (id, thread) = text.split_once('-')?;
    let parsed = (id.parse().ok()?, thread.parse().ok()?);
    (id.len() == 6 && parsed.1 < WRITERS && stress_key(parsed.0, parsed.1) == key).then_some(parsed)
}

fn value_seed(key: &[u8], version: u64) -> u64 {
    key.iter()
        .fold(version, |h, &b| Mix(h ^ u64::from(b)).next())
}

/// A value that names its key and version, then `extra` bytes determined by both.
fn stress_value(key: &[u8], version: u64, extra: usize) -> Vec<u8> {
    [
        key,
        b"|",
        &version.to_le_bytes(),
        &filler(value_seed(key, version), extra),
    ]
    .concat()
}

/// Whether `value` is, byte for byte, a value written for `key` (not torn, not another key's).
fn stress_value_is_whole(key: &[u8], value: &[u8]) -> bool {
    let header = key.len() + 9;
    if value.len() < header || !value.starts_with(key) || value[key.len()] != b'|' {
        return false;
    }
    let version = u64::from_le_bytes(value[key.len() + 1..header].try_into().unwrap());
    value[header..] == filler(value_seed(key, version), value.len() - header)
}

fn stress_extra(rng: &mut StdRng) -> usize {
    match rng.gen_range(0..1000) {
        0..800 => rng.gen_range(0..100),
        800..970 => rng.gen_range(100..2000),
        970..997 => rng.gen_range(2000..20_000),
        _ => rng.gen_range(20_000..=MAX_VALUE_LEN - 20),
    }
}

/// Checks a scan seen while others write: strictly ordered, inside its bounds, whole values, and
/// every stable key of the stretch it covered present with its value.
fn check_concurrent_scan(
    found: &Entries,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    reverse: bool,
    exhausted: bool,
    stable: &Model,
) {
    for pair in found.windows(2) {
        let ordered = if reverse {
            pair[0].0 > pair[1].0
        } else {
            pair[0].0 < pair[1].0
        };
        assert!(
            ordered,
            "scan (reverse: {reverse}) not strictly ordered: {} then {}",
            short(&pair[0].0),
            short(&pair[1].0)
        );
    }
    for (key, value) in found {
        assert!(
            (start, end).contains(key.as_slice()),
            "scan {start:?}..{end:?} returned {} outside its bounds",
            short(key)
        );
        assert!(
            parse_stress_key(key).is_some(),
            "scan returned a key never written: {}",
            short(key)
        );
        assert!(
            stress_value_is_whole(key, value),
            "scan returned a broken value for {}: {}",
            short(key),
            short(value)
        );
    }
    let last = found.last().map(|(k, _)| Bound::Included(k.as_slice()));
    let (low, high) = match (reverse, exhausted, last) {
        (_, true, _) | (_, false, None) => (start, end),
        (false, false, Some(last)) => (start, last),
        (true, false, Some(last)) => (last, end),
    };
    if range_is_empty(low, high) {
        return;
    }
    let seen: BTreeMap<&[u8], &[u8]> = found
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    for (key, value) in stable.range::<[u8], _>((low, high)) {
        assert_eq!(
            seen.get(key.as_slice()),
            Some(&value.as_slice()),
            "scan {start:?}..{end:?} (reverse: {reverse}, {} entries) skipped or changed {}",
            found.len(),
            short(key)
        );
    }
}

/// A writer: inserts, updates, deletes, reads and scans its own keys, checking every answer against
/// its own model, which it returns.
fn writer(
    tree: &BTree,
    thread: usize,
    stable: &Model,
    deadline: Instant,
    ops: &AtomicU64,
) -> Model {
    let mut rng = StdRng::seed_from_u64(thread as u64);
    let mut model = Model::new();
    let mut version = 0u64;
    while Instant::now() < deadline {
        let id = match rng.gen_range(0..IDS) {
            id if id.is_multiple_of(10) => id + 1,
            id => id,
        };
        let key = stress_key(id, thread);
        match rng.gen_range(0..100) {
            0..55 => {
                version += 1;
                let value = stress_value(&key, version, stress_extra(&mut rng));
                let old = tree.insert(&key, &value).unwrap();
                let expected = model.insert(key.clone(), value);
                assert!(
                    old == expected,
                    "writer {thread}: insert of {} returned {}, expected {}",
                    short(&key),
                    short_opt(old.as_deref()),
                    short_opt(expected.as_deref())
                );
            }
            55..80 => {
                let old = tree.delete(&key).unwrap();
                let expected = model.remove(&key);
                assert!(
                    old == expected,
                    "writer {thread}: delete of {} returned {}, expected {}",
                    short(&key),
                    short_opt(old.as_deref()),
                    short_opt(expected.as_deref())
                );
            }
            80..95 => {
                let found = tree.get(&key).unwrap();
                assert!(
                    found.as_ref() == model.get(&key),
                    "writer {thread}: get of {} returned {}, expected {}",
                    short(&key),
                    short_opt(found.as_deref()),
                    short_opt(model.get(&key).map(Vec::as_slice))
                );
            }
            _ => {
                let low = rng.gen_range(0..IDS);
                let (start, end) = (
                    format!("{low:06}").into_bytes(),
                    format!("{:06}", low + rng.gen_range(1..60)).into_bytes(),
                );
                let bounds = (
                    Bound::Included(start.as_slice()),
                    Bound::Excluded(end.as_slice()),
                );
                let reverse = rng.gen_bool(0.5);
                let found = tree_scan(tree, bounds.0, bounds.1, reverse, usize::MAX).unwrap();
                check_concurrent_scan(&found, bounds.0, bounds.1, reverse, true, stable);
                let mine: Entries = found
                    .into_iter()
                    .filter(|(k, _)| {
                        parse_stress_key(k)
                            .is_some_and(|(id, t)| t == thread && !id.is_multiple_of(10))
                    })
                    .collect();
                let expected = model_scan(&model, bounds.0, bounds.1, reverse, usize::MAX);
                same_entries(
                    &format!("writer {thread}: own keys in a scan"),
                    &mine,
                    &expected,
                )
                .unwrap();
            }
        }
        ops.fetch_add(1, Ordering::Relaxed);
    }
    model
}

/// A reader: point reads and scans (random bounds and direction, cut short or full) of everybody's
/// keys, checking what can be known while others write.
fn reader(tree: &BTree, seed: u64, stable: &Model, deadline: Instant, ops: &AtomicU64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let edge = |rng: &mut StdRng| -> Bound<Vec<u8>> {
        let id = rng.gen_range(0..=IDS);
        let key = if rng.gen_bool(0.5) {
            format!("{id:06}").into_bytes()
        } else {
            stress_key(id, rng.gen_range(0..WRITERS))
        };
        match rng.gen_range(0..5) {
            0 => Bound::Unbounded,
            1 | 2 => Bound::Included(key),
            _ => Bound::Excluded(key),
        }
    };
    while Instant::now() < deadline {
        if rng.gen_bool(0.4) {
            let key = stress_key(rng.gen_range(0..IDS), rng.gen_range(0..WRITERS));
            match (tree.get(&key).unwrap(), stable.get(&key)) {
                (found, Some(value)) => {
                    assert_eq!(found.as_ref(), Some(value), "stable key {}", short(&key))
                }
                (Some(found), None) => assert!(
                    stress_value_is_whole(&key, &found),
                    "get of {} returned a broken value {}",
                    short(&key),
                    short(&found)
                ),
                (None, None) => {}
            }
        } else {
            let (start, end) = (edge(&mut rng), edge(&mut rng));
            let (start, end) = (
                start.as_ref().map(Vec::as_slice),
                end.as_ref().map(Vec::as_slice),
            );
            let limit = if rng.gen_bool(0.05) {
                usize::MAX
            } else {
                rng.gen_range(1..300)
            };
            let reverse = rng.gen_bool(0.5);
            let found = tree_scan(tree, start, end, reverse, limit).unwrap();
            let exhausted = found.len() < limit;
            check_concurrent_scan(&found, start, end, reverse, exhausted, stable);
        }
        ops.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn concurrent_readers_writers_and_scanners() {
    let seconds: u64 = std::env::var("STEADY_BTREE_STRESS_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        background_flush: true,
        ..store_config(4096, 64)
    };
    let store = Store::open_dir(dir.path(), &config).unwrap();
    let space = store.create_space().unwrap();
    let space_id = space.id();
    let tree = Arc::new(BTree::create(store.pool().clone(), space, INDEX).unwrap());
    let stable: Arc<Model> = Arc::new(
        (0..IDS)
            .step_by(10)
            .flat_map(|id| (0..WRITERS).map(move |t| stress_key(id, t)))
            .map(|key| {
                let value = stress_value(&key, 0, 40);
                (key, value)
            })
            .collect(),
    );
    for (key, value) in stable.iter() {
        assert_eq!(tree.insert(key, value).unwrap(), None);
    }

    let deadline = Instant::now() + Duration::from_secs(seconds);
    let ops: Arc<Vec<AtomicU64>> =
        Arc::new((0..WRITERS + READERS).map(|_| AtomicU64::new(0)).collect());
    let handles: Vec<JoinHandle<Model>> = (0..WRITERS + READERS)
        .map(|n| {
            let (tree, stable, ops) = (tree.clone(), stable.clone(), ops.clone());
            thread::spawn(move || {
                if n < WRITERS {
                    writer(&tree, n, &stable, deadline, &ops[n])
                } else {
                    reader(&tree, 1000 + n as u64, &stable, deadline, &ops[n]);
                    Model::new()
                }
            })
        })
        .collect();
    let give_up = deadline + Duration::from_secs(120);
    let counts = || -> Vec<u64> { ops.iter().map(|n| n.load(Ordering::Relaxed)).collect() };
    while !handles.iter().all(|h| h.is_finished()) {
        assert!(
            Instant::now() < give_up,
            "threads still running 120 s after the deadline (deadlock?); operations so far: {:?}",
            counts()
        );
        thread::sleep(Duration::from_millis(50));
    }
    let mut expected = (*stable).clone();
    for handle in handles {
        expected.extend(
            handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        );
    }
    let counts = counts();
    println!("operations per thread (writers, then readers): {counts:?}");
    assert!(
        counts.iter().all(|&n| n > 0),
        "a thread made no progress: {counts:?}"
    );

    let expected = model_entries(&expected);
    same_entries(
        "content after the run",
        &full_content(&tree).unwrap(),
        &expected,
    )
    .unwrap();
    verify_clean(&tree).unwrap();
    assert!(
        store.pool_stats().evictions > 0,
        "the pool never evicted a page"
    );
    drop(tree);
    store.close().unwrap();
    let vfs = OsVfs::new(dir.path(), false).unwrap();
    check_clean(&vfs).unwrap();

    let store = Store::open_dir(dir.path(), &config).unwrap();
    let tree = BTree::open(store.pool().clone(), store.space(space_id).unwrap(), INDEX).unwrap();
    same_entries(
        "content after reopen",
        &full_content(&tree).unwrap(),
        &expected,
    )
    .unwrap();
    drop(tree);
    store.close().unwrap();
}
