use std::collections::BTreeMap;
use std::ops::Bound;

use rand::{rngs::StdRng, seq::SliceRandom, Rng, SeedableRng};

use super::*;
use crate::io::MemVfs;
use crate::store::{Store, StoreConfig};

fn store(page_size: usize, frames: usize) -> Store {
    let config = StoreConfig {
        page_size,
        buffer_pool_bytes: frames * page_size,
        background_flush: false,
        log_capacity: 16 << 20,
        ..Default::default()
    };
    Store::open(Arc::new(MemVfs::new()), &config).unwrap()
}

fn content(tree: &BTree) -> Vec<(Vec<u8>, Vec<u8>)> {
    tree.range(Bound::Unbounded, Bound::Unbounded)
        .map(|e| e.unwrap())
        .collect()
}

#[test]
fn random_operations_match_a_model_and_shrink_back() {
    let store = store(4096, 64);
    let tree = BTree::create(store.pool().clone(), store.create_space().unwrap(), 1).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = StdRng::seed_from_u64(1);
    for _ in 0..20_000 {
        let key = format!("k{:05}", rng.gen_range(0..3000)).into_bytes();
        if rng.gen_bool(0.3) {
            assert_eq!(tree.delete(&key).unwrap(), model.remove(&key));
        } else {
            let len = if rng.gen_bool(0.02) {
                rng.gen_range(2000..70000)
            } else {
                rng.gen_range(0..300)
            };
            let value = vec![rng.gen::<u8>(); len.min(MAX_VALUE_LEN)];
            assert_eq!(tree.insert(&key, &value).unwrap(), model.insert(key, value));
        }
    }
    let verified = tree.verify().unwrap();
    assert!(verified.problems.is_empty(), "{:?}", verified.problems);
    let expected: Vec<_> = model.clone().into_iter().collect();
    assert_eq!(content(&tree), expected);
    let mut reversed = expected.clone();
    reversed.reverse();
    let backward: Vec<_> = tree
        .range_rev(Bound::Unbounded, Bound::Unbounded)
        .map(|e| e.unwrap())
        .collect();
    assert_eq!(backward, reversed);
    for key in model.keys() {
        tree.delete(key).unwrap().unwrap();
    }
    let verified = tree.verify().unwrap();
    assert!(verified.problems.is_empty(), "{:?}", verified.problems);
    assert_eq!(tree.stats().unwrap().height, 1);
    assert_eq!(verified.pages.len(), 1);
}

#[test]
fn bulk_build_equals_inserting() {
    let store = store(4096, 64);
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..20_000u32)
        .map(|i| {
            (
                i.to_be_bytes().to_vec(),
                vec![i as u8; (i % 50) as usize + if i % 997 == 0 { 9000 } else { 0 }],
            )
        })
        .collect();
    let space = store.create_space().unwrap();
    let built = BTree::bulk_build(
        store.pool().clone(),
        space,
        7,
        entries.clone().into_iter().map(Ok),
        &mut |_| {},
    )
    .unwrap();
    let verified = built.verify().unwrap();
    assert!(verified.problems.is_empty(), "{:?}", verified.problems);
    assert_eq!(content(&built), entries);
    assert_eq!(
        built.get(&77u32.to_be_bytes()).unwrap(),
        Some(entries[77].1.clone())
    );
    built.insert(b"\x00\x00\x00\x05x", b"between").unwrap();
    assert!(built.verify().unwrap().problems.is_empty());
}

/// Cuts of a three-level tree: inside the range asked, ascending, and parts of similar size
/// that together hold every key of the range once.
#[test]
fn partitions_cut_ranges_into_even_parts() {
    let store = store(4096, 512);
    let tree = BTree::create(store.pool().clone(), store.create_space().unwrap(), 1).unwrap();
    let key = |i: u32| format!("k{i:07}").into_bytes();
    for i in 0..60_000 {
        tree.insert(&key(i), &[7; 40]).unwrap();
    }
    let count = |start: Bound<&[u8]>, end: Bound<&[u8]>| tree.range(start, end).count();
    let (low, high) = (key(5_000), key(50_000));
    for (start, end) in [
        (Bound::Unbounded, Bound::Unbounded),
        (
            Bound::Included(low.as_slice()),
            Bound::Excluded(high.as_slice()),
        ),
        (
            Bound::Excluded(low.as_slice()),
            Bound::Included(high.as_slice()),
        ),
    ] {
        let partition = tree.partition(3, start, end).unwrap();
        let total = count(start, end);
        assert!(
            partition.leaves * 40 > total / 10,
            "{} leaves",
            partition.leaves
        );
        assert_eq!(partition.keys.len(), 2);
        assert!(partition.keys.windows(2).all(|w| w[0] < w[1]));
        let mut lower = start;
        let mut sizes = Vec::new();
        for cut in partition.keys.iter().map(Some).chain([None]) {
            let upper = cut.map_or(end, |k| Bound::Excluded(k.as_slice()));
            sizes.push(count(lower, upper));
            lower = cut.map_or(Bound::Unbounded, |k| Bound::Included(k.as_slice()));
        }
        assert_eq!(sizes.iter().sum::<usize>(), total);
        assert!(sizes.iter().all(|&n| n > total / 5), "{sizes:?} of {total}");
    }
    let (a, b) = (key(100), key(120));
    let short = tree
        .partition(
            3,
            Bound::Included(a.as_slice()),
            Bound::Included(b.as_slice()),
        )
        .unwrap();
    assert!(short.leaves <= 2 && short.keys.len() <= 1, "{short:?}");
}

/// A tree of `keys` 4-byte keys with 100-byte values.
fn two_level_tree(keys: u32) -> (Store, BTree) {
    let store = store(4096, 512);
    let tree = BTree::create(store.pool().clone(), store.create_space().unwrap(), 1).unwrap();
    for key in 0..keys {
        tree.insert(&key.to_be_bytes(), &[7; 100]).unwrap();
    }
    (store, tree)
}

#[test]
fn keyed_read_ahead_asks_for_the_leaves_of_coming_keys_once_in_order() {
    let (_store, tree) = two_level_tree(3000);
    assert_eq!(tree.stats().unwrap().height, 2);
    let root = tree
        .pool
        .fetch_read(&tree.space, tree.entry.root, AccessHint::Normal)
        .unwrap();
    let page = Page::new(&root);
    let child = |slot: usize| node::branch_child(page.record(slot));
    let leaf_of = |key: &[u8]| node::branch_search(page, key, false);
    // Every 5th key: several keys fall in each leaf.
    let keys: Vec<Vec<u8>> = (0..3000u32)
        .step_by(5)
        .map(|k| k.to_be_bytes().to_vec())
        .collect();
    let mut ahead = cursor::KeyedReadAhead::default();
    let max_depth = 1000;

    let (pages, _) = ahead.advance(root.page_no(), page, 0, None, &keys, 0, max_depth);
    assert!(pages.is_empty(), "nothing ahead of the first leaf");
    // The read is at the leaf of keys[k] (slot 1): the next 16 leaves its keys fall in.
    let k = keys.iter().position(|key| leaf_of(key) == 1).unwrap();
    let (pages, scan) = ahead.advance(root.page_no(), page, 1, None, &keys, k, max_depth);
    assert_eq!(pages, (2..18).map(child).collect::<Vec<_>>());
    assert_eq!(
        scan.first, 3,
        "the first page asked for is the read's third leaf"
    );
    // At the next leaf the window is 32 and 15 of the leaves asked for are ahead, under half of
    // it: the next 32 leaves after those, numbered on.
    let k = keys.iter().position(|key| leaf_of(key) == 2).unwrap();
    let (pages, scan) = ahead.advance(root.page_no(), page, 2, None, &keys, k, max_depth);
    assert_eq!(pages, (18..50).map(child).collect::<Vec<_>>());
    assert_eq!(scan.first, 19);
    // At the next, the window is 64 and 46 leaves asked for are ahead: nothing more yet.
    let k = keys.iter().position(|key| leaf_of(key) == 3).unwrap();
    let (pages, _) = ahead.advance(root.page_no(), page, 3, None, &keys, k, max_depth);
    assert!(pages.is_empty());
    // Further on, the window (now 128) continues after the last leaf asked for, to the last key.
    let k = keys.iter().position(|key| leaf_of(key) == 30).unwrap();
    let (pages, scan) = ahead.advance(root.page_no(), page, 30, None, &keys, k, max_depth);
    let last_slot = leaf_of(keys.last().unwrap());
    assert!(last_slot < 49 + 128, "{last_slot}");
    assert_eq!(pages, (50..=last_slot).map(child).collect::<Vec<_>>());
    assert_eq!(scan.first, 51);
}

#[test]
fn keyed_read_ahead_skips_leaves_no_key_falls_in() {
    let (_store, tree) = two_level_tree(3000);
    let root = tree
        .pool
        .fetch_read(&tree.space, tree.entry.root, AccessHint::Normal)
        .unwrap();
    let page = Page::new(&root);
    let leaf_of = |key: &[u8]| node::branch_search(page, key, false);
    // One key per third leaf: the leaves between are never asked for.
    let slots = page.slot_count();
    let keys: Vec<Vec<u8>> = (0..slots)
        .step_by(3)
        .map(|slot| {
            let first = if slot == 0 {
                vec![0; 4]
            } else {
                node::branch_key(page.record(slot)).to_vec()
            };
            assert_eq!(leaf_of(&first), slot);
            first
        })
        .collect();
    let mut ahead = cursor::KeyedReadAhead::default();
    ahead.advance(root.page_no(), page, 0, None, &keys, 0, 1000);
    let (pages, _) = ahead.advance(root.page_no(), page, 3, None, &keys, 1, 1000);
    let expected: Vec<PageNo> = (2..keys.len())
        .map(|i| node::branch_child(page.record(3 * i)))
        .take(16)
        .collect();
    assert_eq!(pages, expected);
}

/// An entry's tag in `tagged_leaves_are_passed_over_only_when_every_entry_may_be`: values
/// `[1, t]` carry tag `t`, others none.
fn test_entry_tag(_key: &[u8], value: &[u8]) -> Option<u64> {
    (value.first() == Some(&1)).then(|| u64::from(value[1]))
}

/// Tagging leaves while entries get tags, lose them (replaced), come and go at random: a range
/// walk that passes over leaves whose tag a reader accepts still visits every entry that reader
/// must see (one without a tag or with a tag it does not accept), and, once every entry has a
/// tag it accepts, visits none.
#[test]
fn tagged_leaves_are_passed_over_only_when_every_entry_may_be() {
    let store = store(4096, 64);
    let tree = BTree::create(store.pool().clone(), store.create_space().unwrap(), 1).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = StdRng::seed_from_u64(7);
    let key_of = |n: u32| format!("k{n:05}").into_bytes();
    let put = |tree: &BTree, model: &mut BTreeMap<_, _>, key: Vec<u8>, value: Vec<u8>| {
        tree.insert(&key, &value).unwrap();
        if test_entry_tag(&key, &value).is_some() {
            tree.tag_leaf(&key, test_entry_tag).unwrap();
        }
        model.insert(key, value);
    };
    for n in 0..3000 {
        put(&tree, &mut model, key_of(n), vec![1, rng.gen_range(1..100)]);
    }
    for round in 0..20_000 {
        let key = key_of(rng.gen_range(0..3000));
        match rng.gen_range(0..100) {
            0 => {
                put(&tree, &mut model, key.clone(), vec![0, 0]);
                let mut seen = false;
                let at = Bound::Included(key.as_slice());
                tree.for_each_in_range(
                    at,
                    at,
                    |_| true,
                    |_, _| {
                        seen = true;
                        Ok::<_, StorageError>(true)
                    },
                )
                .unwrap();
                assert!(seen, "an entry without a tag in a leaf passed over");
            }
            1 => {
                tree.delete(&key).unwrap();
                model.remove(&key);
            }
            _ => put(&tree, &mut model, key, vec![1, rng.gen_range(1..100)]),
        }
        if round % 50 == 0 {
            let reader = rng.gen_range(0..110);
            let mut visited = BTreeMap::new();
            let passes = |tag: u64| tag <= reader;
            let visit = |key: &[u8], value: &[u8]| {
                visited.insert(key.to_vec(), value.to_vec());
                Ok::<_, StorageError>(true)
            };
            tree.for_each_in_range(Bound::Unbounded, Bound::Unbounded, passes, visit)
                .unwrap();
            for (key, value) in &model {
                let must_see = test_entry_tag(key, value).is_none_or(|tag| tag > reader);
                assert!(
                    !must_see || visited.get(key) == Some(value),
                    "{key:?} not visited"
                );
            }
            assert!(visited
                .iter()
                .all(|(key, value)| model.get(key) == Some(value)));
        }
    }
    for n in 0..3000 {
        put(&tree, &mut model, key_of(n), vec![1, 50]);
    }
    let mut visits = 0;
    let count = |_: &[u8], _: &[u8]| {
        visits += 1;
        Ok::<_, StorageError>(true)
    };
    tree.for_each_in_range(Bound::Unbounded, Bound::Unbounded, |tag| tag >= 50, count)
        .unwrap();
    assert_eq!(visits, 0);
    let verified = tree.verify().unwrap();
    assert!(verified.problems.is_empty(), "{:?}", verified.problems);
}

/// `delete_if` removes a key only when its present value is accepted, on the leaf-only path
/// and on the path that merges pages alike, and for values in overflow chains: against a model,
/// values tagged by their first byte, every odd tag refused. The tree verifies afterwards.
#[test]
fn delete_if_removes_only_the_values_it_accepts() {
    let store = store(4096, 256);
    let tree = BTree::create(store.pool().clone(), store.create_space().unwrap(), 1).unwrap();
    let mut rng = StdRng::seed_from_u64(11);
    let mut model = BTreeMap::new();
    for key in 0u32..6_000 {
        let len = if key % 97 == 0 { 9_000 } else { 20 };
        let value = vec![rng.gen_range(0u8..4); len];
        tree.insert(&key.to_be_bytes(), &value).unwrap();
        model.insert(key.to_be_bytes().to_vec(), value);
    }
    let even = |value: &[u8]| value[0].is_multiple_of(2);
    for key in 0u32..6_000 {
        let key = key.to_be_bytes().to_vec();
        let accepted = even(&model[&key]);
        let removed = tree.delete_if(&key, even).unwrap();
        if accepted {
            assert_eq!(removed, model.remove(&key));
        } else {
            assert_eq!(removed, None);
        }
    }
    assert_eq!(tree.delete_if(&[0xff; 4], |_| true).unwrap(), None);
    assert!(model.values().all(|value| !even(value)));
    assert_eq!(content(&tree), model.into_iter().collect::<Vec<_>>());
    let verified = tree.verify().unwrap();
    assert!(verified.problems.is_empty(), "{:?}", verified.problems);
}

/// Purge's deletes (`delete_compacting`) merge leaves left under half full; ordinary deletes
/// only those under a quarter. Leaves split by inserts in random order, then 60% of their
/// entries removed the same way from two trees: both hold what the model holds and verify, and
/// the compacting one ends with far fewer leaves.
#[test]
fn compacting_deletes_merge_half_empty_leaves() {
    let store = store(4096, 256);
    let mut trees = Vec::new();
    for id in [1, 2] {
        trees.push(BTree::create(store.pool().clone(), store.create_space().unwrap(), id).unwrap());
    }
    let mut rng = StdRng::seed_from_u64(7);
    let mut keys: Vec<u32> = (0..20_000).collect();
    keys.shuffle(&mut rng);
    for tree in &trees {
        for key in &keys {
            tree.insert(&key.to_be_bytes(), &[7u8; 24]).unwrap();
        }
    }
    let leaves_before = trees[0].stats().unwrap().leaf_pages;
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = keys
        .iter()
        .map(|k| (k.to_be_bytes().to_vec(), vec![7u8; 24]))
        .collect();
    for key in keys.iter().filter(|_| rng.gen_bool(0.6)) {
        let key = key.to_be_bytes();
        let expected = model.remove(key.as_slice());
        assert_eq!(trees[0].delete_compacting(&key).unwrap(), expected);
        assert_eq!(trees[1].delete(&key).unwrap(), expected);
    }
    let expected: Vec<_> = model.into_iter().collect();
    for tree in &trees {
        let verified = tree.verify().unwrap();
        assert!(verified.problems.is_empty(), "{:?}", verified.problems);
        assert_eq!(content(tree), expected);
    }
    let compacted = trees[0].stats().unwrap().leaf_pages;
    let ordinary = trees[1].stats().unwrap().leaf_pages;
    assert!(
        compacted * 10 < ordinary * 7,
        "{leaves_before} leaves, then {compacted} after compacting deletes, {ordinary} after ordinary ones"
    );
}
