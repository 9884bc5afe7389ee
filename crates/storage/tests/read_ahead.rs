//! Read-ahead on a real directory (io_uring, `O_DIRECT`): pages read ahead arrive verified and
//! count once as read-ahead hits; read-ahead stops at a full pool rather than evict hot pages or
//! its own unused pages, scan reads recycle their own frames first, and unused pages given up count
//! as wasted; a corrupt page is reported by the reader that wants it; B+tree scans read ahead only
//! once past their first leaf, forward and backward, and step through the leaves' parent.

use std::ops::Bound;
use std::sync::Arc;

use steady_storage::btree::{BTree, Entries, LeafWalk};
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
    let mut mtr = Mtr::new(&writer).unwrap();
    let segment = space.create_segment(&mut mtr).unwrap();
    mtr.commit();
    let mut pages = Vec::new();
    for _ in 0..count {
        let mut mtr = Mtr::new(&writer).unwrap();
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
    pool.read_ahead(&space, wanted.clone(), None);
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

    pool.read_ahead(&space, pages.clone(), None);
    pool.wait_read_ahead();
    let stats = pool.stats();
    assert_eq!(
        stats.read_ahead_reads, 150,
        "cached pages are not read again"
    );
    assert_eq!(stats.read_ahead_wasted, 0);
}

#[test]
fn read_ahead_stops_at_a_full_pool_and_unused_pages_count_as_wasted() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (_vfs, space, pages) = space_on_disk(dir.path(), 150);
    let pool = pool(64);
    let (hot, rest) = pages.split_at(10);
    let (ahead, others) = rest.split_at(100);
    for _ in 0..2 {
        for &page_no in hot {
            drop(
                pool.fetch_read(&space, page_no, AccessHint::Normal)
                    .unwrap(),
            );
        }
    }
    // 54 frames are free: read-ahead fills them and stops rather than evict its own pages.
    pool.read_ahead(&space, ahead.to_vec(), None);
    pool.wait_read_ahead();
    assert_eq!(pool.stats().read_ahead_reads, 54);
    assert_eq!(pool.stats().read_ahead_wasted, 0);
    for &page_no in hot {
        assert!(pool.contains(&space, page_no), "hot page {page_no} stays");
    }
    // Ordinary scan reads recycle their own frames before read-ahead pages.
    for &page_no in &others[..20] {
        drop(pool.fetch_read(&space, page_no, AccessHint::Scan).unwrap());
    }
    let cached = |pages: &[PageNo]| pages.iter().filter(|&&p| pool.contains(&space, p)).count();
    assert_eq!(
        cached(&ahead[..54]),
        54,
        "read-ahead pages wait for their reader"
    );
    // Twenty pages held at once need twenty frames: only read-ahead pages and hot pages are left,
    // and the read-ahead pages given up were read for nothing.
    let held: Vec<_> = others[20..]
        .iter()
        .map(|&page_no| pool.fetch_read(&space, page_no, AccessHint::Scan).unwrap())
        .collect();
    let stats = pool.stats();
    let hot_lost = (hot.len() - cached(hot)) as u64;
    assert_eq!(stats.read_ahead_wasted + hot_lost, 20, "{stats:?}");
    assert_eq!(cached(&ahead[..54]) as u64, 54 - stats.read_ahead_wasted);
    drop(held);
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
    pool.read_ahead(&space, pages.clone(), None);
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
    // Forward, a leaf at a time: nothing ahead of the first leaf; the second asks for the next
    // 16 (4 << 2 leaves read; the pool's sixteenth is 64), which the walk then finds read.
    let (store, tree) = cold_tree();
    let pool = store.pool();
    let (mut walk, mut entries) = (LeafWalk::default(), Entries::default());
    let mut next = tree
        .read_leaf(&mut walk, Bound::Unbounded, Bound::Unbounded, &mut entries)
        .unwrap();
    pool.wait_read_ahead();
    assert_eq!(
        pool.stats().read_ahead_reads,
        0,
        "a scan's first leaf reads nothing ahead"
    );
    let leaf_after = |walk: &mut LeafWalk, entries: &mut Entries, from: Option<Vec<u8>>| {
        let from = from.expect("more leaves");
        tree.read_leaf(walk, Bound::Included(&from[..]), Bound::Unbounded, entries)
            .unwrap()
    };
    next = leaf_after(&mut walk, &mut entries, next);
    pool.wait_read_ahead();
    assert_eq!(pool.stats().read_ahead_reads, 16);
    let before = thread_io();
    for _ in 0..16 {
        next = leaf_after(&mut walk, &mut entries, next);
    }
    let io = thread_io().since(before);
    assert!(io.read_ahead >= 16 && io.reads == 0, "{io:?}");
    drop(tree);
    store.close().unwrap();

    // A whole scan: every key once, two page requests a leaf (a descent per leaf would request
    // root, parent and leaf), and nothing read ahead in vain in a pool that holds the tree.
    let (store, tree) = cold_tree();
    let before = thread_io();
    let keys: Vec<u32> = tree
        .range(Bound::Unbounded, Bound::Unbounded)
        .map(|entry| u32::from_be_bytes(entry.unwrap().0.try_into().unwrap()))
        .collect();
    let io = thread_io().since(before);
    assert!(keys.iter().copied().eq(0..KEYS), "every key once, in order");
    assert!(
        io.hits + io.reads <= leaves as u64 * 2 + 20,
        "{leaves} leaves, {io:?}"
    );
    store.pool().wait_read_ahead();
    assert_eq!(store.pool().stats().read_ahead_wasted, 0);
    drop(tree);
    store.close().unwrap();

    // Backward from a key: every key once, and the leaves below read ahead once past the first.
    let (store, tree) = cold_tree();
    let low = key(KEYS / 4);
    let mut keys = tree.range_rev(Bound::Included(&low[..]), Bound::Unbounded);
    let mut taken = Vec::new();
    let first_leaf = entries_per_leaf(KEYS, leaves);
    taken.extend(
        keys.by_ref()
            .take(first_leaf + first_leaf / 2)
            .map(|e| e.unwrap().0),
    );
    store.pool().wait_read_ahead();
    assert!(
        store.pool().stats().read_ahead_reads >= 16,
        "{:?}",
        store.pool().stats()
    );
    taken.extend(keys.map(|e| e.unwrap().0));
    let keys: Vec<u32> = taken
        .into_iter()
        .map(|k| u32::from_be_bytes(k.try_into().unwrap()))
        .collect();
    assert!(
        keys.iter().copied().eq((KEYS / 4..KEYS).rev()),
        "every key once, in order"
    );
    drop(tree);
    store.close().unwrap();

    // Sorted keys spread over the tree (a multi-range read): every value right, each leaf read
    // at most once, nothing read ahead in vain.
    let (store, tree) = cold_tree();
    let wanted: Vec<Vec<u8>> = (0..KEYS).step_by(7).map(|k| key(k).to_vec()).collect();
    let values = tree.get_many(&wanted).unwrap();
    for (k, value) in wanted.iter().zip(&values) {
        assert_eq!(value.as_deref(), Some(&[k[3]; 80][..]));
    }
    store.pool().wait_read_ahead();
    let stats = store.pool().stats();
    assert!(
        stats.reads as usize <= leaves + 10,
        "{leaves} leaves, {stats:?}"
    );
    assert_eq!(stats.read_ahead_wasted, 0, "{stats:?}");
    drop(tree);
    store.close().unwrap();
}

/// At least the entries of a leaf, on average plus a margin, so that taking twice that many
/// reaches a scan's second leaf.
fn entries_per_leaf(keys: u32, leaves: usize) -> usize {
    keys as usize / leaves + 1
}
