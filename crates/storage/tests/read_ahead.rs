//! Read-ahead on a real directory (io_uring, `O_DIRECT`): pages read ahead arrive verified and
//! count once as read-ahead hits, unused ones count as wasted without pushing out the hot set, a
//! corrupt one is reported by the reader that wants it, and B+tree scans read ahead only when
//! they go on past their first leaf, forward and backward.

use std::ops::Bound;
use std::sync::Arc;

use steady_storage::btree::BTree;
use steady_storage::buffer_pool::{thread_io, AccessHint, BufferPool, PoolConfig};
use steady_storage::io::{OsVfs, Vfs};
use steady_storage::mtr::Mtr;
use steady_storage::page::{Page, PageMut, PageType};
use steady_storage::space::Space;
use steady_storage::store::{Store, StoreConfig};
use steady_storage::PageNo;

const PAGE: usize = 4096;

fn pool(frames: usize) -> Arc<BufferPool> {
    let mut config = PoolConfig::with_budget(PAGE, frames * PAGE);
    config.background_flush = false;
    BufferPool::new(config).unwrap()
}

/// A space of `count` formatted pages written to disk, opened again with a cold pool.
fn space_on_disk(dir: &std::path::Path, count: usize) -> (OsVfs, Arc<Space>, Vec<PageNo>) {
    let vfs = OsVfs::new(dir, true).unwrap();
    let space = Space::create(&vfs, 1, PAGE).unwrap();
    let writer = pool(64);
    let mut mtr = Mtr::new(&writer);
    let segment = space.create_segment(&mut mtr).unwrap();
    mtr.commit();
    let mut pages = Vec::new();
    for _ in 0..count {
        let mut mtr = Mtr::new(&writer);
        let page_no = space.allocate_page(&mut mtr, segment).unwrap();
        let handle = mtr.create(&space, page_no).unwrap();
        PageMut::new(mtr.page_mut(handle)).format(PageType::Leaf, space.id(), page_no, 1, 0);
        mtr.commit();
        pages.push(page_no);
    }
    writer.flush_all().unwrap();
    drop(writer);
    let space = Space::open(&vfs, 1).unwrap();
    (vfs, space, pages)
}

#[test]
fn pages_read_ahead_arrive_verified_and_count_once_when_used() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (_vfs, space, pages) = space_on_disk(dir.path(), 150);
    let pool = pool(256);
    let wanted: Vec<PageNo> = pages[..100].iter().rev().copied().collect();
    pool.read_ahead(&space, wanted.clone());
    pool.wait_read_ahead();
    assert_eq!(pool.stats().read_ahead_reads, 100);
    assert_eq!(pool.stats().reads, 100);

    let before = thread_io();
    for &page_no in &wanted {
        let guard = pool.fetch_read(&space, page_no, AccessHint::Scan).unwrap();
        assert_eq!(Page::new(&guard).page_no(), page_no);
    }
    let used = thread_io().since(before);
    assert_eq!((used.hits, used.reads, used.read_ahead), (100, 0, 100));
    let again = thread_io();
    for &page_no in &wanted {
        drop(pool.fetch_read(&space, page_no, AccessHint::Scan).unwrap());
    }
    assert_eq!(thread_io().since(again).read_ahead, 0, "counted once");

    pool.read_ahead(&space, pages.clone());
    pool.wait_read_ahead();
    let stats = pool.stats();
    assert_eq!(
        stats.read_ahead_reads, 150,
        "cached pages are not read again"
    );
    assert_eq!(stats.read_ahead_wasted, 0);
}

#[test]
fn unused_read_ahead_is_wasted_and_leaves_the_hot_set_in_place() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (_vfs, space, pages) = space_on_disk(dir.path(), 110);
    let pool = pool(64);
    let (hot, cold) = pages.split_at(10);
    for _ in 0..2 {
        for &page_no in hot {
            drop(
                pool.fetch_read(&space, page_no, AccessHint::Normal)
                    .unwrap(),
            );
        }
    }
    for batch in cold.chunks(40) {
        pool.read_ahead(&space, batch.to_vec());
        pool.wait_read_ahead();
    }
    let stats = pool.stats();
    assert_eq!(stats.read_ahead_reads, 100);
    assert!(
        stats.read_ahead_wasted >= 100 - 54,
        "at most 54 cold frames keep read-ahead pages: {stats:?}"
    );
    for &page_no in hot {
        assert!(pool.contains(&space, page_no), "hot page {page_no} stays");
    }
}

#[test]
fn a_corrupt_page_read_ahead_is_reported_by_its_reader() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (vfs, _, pages) = space_on_disk(dir.path(), 8);
    let file = vfs.open(&Space::file_name(1), false).unwrap();
    let victim = pages[3];
    let mut page = steady_storage::io::AlignedBuf::zeroed(PAGE);
    file.read_at(&mut page, victim as u64 * PAGE as u64)
        .unwrap();
    page[1000] ^= 1;
    file.write_at(&page, victim as u64 * PAGE as u64).unwrap();
    let space = Space::open(&vfs, 1).unwrap();

    let pool = pool(64);
    pool.read_ahead(&space, pages.clone());
    pool.wait_read_ahead();
    let err = pool
        .fetch_read(&space, victim, AccessHint::Scan)
        .err()
        .expect("the corruption is reported");
    assert!(
        err.to_string()
            .contains(&format!("page {victim} of space 1")),
        "{err}"
    );
    for &page_no in pages.iter().filter(|&&p| p != victim) {
        assert!(pool.fetch_read(&space, page_no, AccessHint::Scan).is_ok());
    }
}

const KEYS: u32 = 20_000;

fn key(i: u32) -> [u8; 4] {
    i.to_be_bytes()
}

#[test]
fn tree_scans_read_ahead_once_past_their_first_leaf() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let config = StoreConfig {
        page_size: PAGE,
        buffer_pool_bytes: 1024 * PAGE,
        direct_io: true,
        log_capacity: 32 << 20,
        ..Default::default()
    };
    let store = Store::open_dir(dir.path(), &config).unwrap();
    let tree = BTree::create(store.pool().clone(), store.create_space().unwrap(), 5).unwrap();
    // Keys in a scattered order, so that leaves split all over their extents.
    for i in 0..KEYS {
        let k = (u64::from(i) * 7_919 % u64::from(KEYS)) as u32;
        tree.insert(&key(k), &[k as u8; 80]).unwrap();
    }
    let (space, stats) = (tree.space().id(), tree.stats().unwrap());
    let leaves = stats.leaf_pages;
    assert!(leaves > 400 && stats.height == 3, "{stats:?}");
    drop(tree);
    store.close().unwrap();

    let cold_tree = || {
        let store = Store::open_dir(dir.path(), &config).unwrap();
        let tree = BTree::open(store.pool().clone(), store.space(space).unwrap(), 5).unwrap();
        (store, tree)
    };
    let (store, tree) = cold_tree();
    let first: Vec<_> = tree
        .range(Bound::Unbounded, Bound::Unbounded)
        .take(10)
        .collect();
    assert_eq!(first.len(), 10);
    store.pool().wait_read_ahead();
    assert_eq!(
        store.pool().stats().read_ahead_reads,
        0,
        "a short scan reads nothing ahead"
    );

    let before = thread_io();
    let keys: Vec<u32> = tree
        .range(Bound::Unbounded, Bound::Unbounded)
        .map(|entry| u32::from_be_bytes(entry.unwrap().0.try_into().unwrap()))
        .collect();
    let io = thread_io().since(before);
    assert!(keys.iter().copied().eq(0..KEYS), "every key once, in order");
    // A descent per leaf would request root, parent and leaf: three pages a leaf. Stepping
    // through the parent requests two.
    assert!(
        io.hits + io.reads <= leaves as u64 * 2 + 20,
        "{leaves} leaves, {io:?}"
    );
    store.pool().wait_read_ahead();
    let stats = store.pool().stats();
    assert!(
        stats.read_ahead_reads as usize >= leaves * 9 / 10,
        "{leaves} leaves, {stats:?}"
    );
    assert_eq!(stats.read_ahead_wasted, 0, "{stats:?}");
    drop(tree);
    store.close().unwrap();

    let (store, tree) = cold_tree();
    let low = key(KEYS / 4);
    let keys: Vec<u32> = tree
        .range_rev(Bound::Included(&low[..]), Bound::Unbounded)
        .map(|entry| u32::from_be_bytes(entry.unwrap().0.try_into().unwrap()))
        .collect();
    assert!(
        keys.iter().copied().eq((KEYS / 4..KEYS).rev()),
        "every key once, in order"
    );
    store.pool().wait_read_ahead();
    let stats = store.pool().stats();
    assert!(
        stats.read_ahead_reads as usize >= leaves * 3 / 4 * 9 / 10,
        "backward: {leaves} leaves, {stats:?}"
    );
    assert!(
        stats.read_ahead_reads as usize <= leaves * 3 / 4 + 64,
        "backward reads ahead about what it scans: {stats:?}"
    );
    drop(tree);
    store.close().unwrap();
}
