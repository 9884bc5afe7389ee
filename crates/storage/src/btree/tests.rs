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
