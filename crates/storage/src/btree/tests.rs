use std::collections::BTreeMap;
use std::ops::Bound;

use rand::{rngs::StdRng, Rng, SeedableRng};

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
