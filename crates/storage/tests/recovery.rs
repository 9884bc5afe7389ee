//! Recovery from the redo log: changes whose log was flushed survive a crash that loses every
//! unwritten page, and a page a crash tore during its write is put back from its copy in the
//! doublewrite area before the log is replayed onto it.

use std::sync::Arc;

use steady_storage::buffer_pool::AccessHint;
use steady_storage::io::{MemVfs, Vfs};
use steady_storage::mtr::Mtr;
use steady_storage::page::{read_u64, write_u64, PageMut, PageType, HEADER_SIZE};
use steady_storage::space::Space;
use steady_storage::store::{Store, StoreConfig};
use steady_storage::PageNo;

const PAGE: usize = 4096;

fn config() -> StoreConfig {
    StoreConfig {
        page_size: PAGE,
        buffer_pool_bytes: 64 * PAGE,
        background_flush: false,
        log_capacity: 16 << 20,
        ..Default::default()
    }
}

fn counter(store: &Store, space: &Arc<Space>, page: PageNo) -> u64 {
    let guard = store
        .pool()
        .fetch_read(space, page, AccessHint::Normal)
        .unwrap();
    read_u64(&guard, HEADER_SIZE + 8)
}

/// Creates a space with `pages` pages holding counters, checkpointed.
fn setup(vfs: &Arc<dyn Vfs>, pages: usize) -> Vec<PageNo> {
    let store = Store::open(vfs.clone(), &config()).unwrap();
    let space = store.create_space().unwrap();
    let mut mtr = Mtr::new(store.pool()).unwrap();
    let segment = space.create_segment(&mut mtr).unwrap();
    mtr.commit();
    let mut numbers = Vec::new();
    for _ in 0..pages {
        let mut mtr = Mtr::new(store.pool()).unwrap();
        let page_no = space.allocate_page(&mut mtr, segment).unwrap();
        let handle = mtr.create(&space, page_no).unwrap();
        PageMut::new(mtr.page_mut(handle)).format(PageType::Leaf, space.id(), page_no, 9, 0);
        mtr.commit();
        numbers.push(page_no);
    }
    store.close().unwrap();
    numbers
}

/// Increments counters in mtrs, flushes the log, and "crashes": the store is dropped with its dirty
/// pages never written.
fn increment_and_crash(vfs: &Arc<dyn Vfs>, pages: &[PageNo], rounds: usize) {
    let store = Store::open(vfs.clone(), &config()).unwrap();
    let space = store.space(1).unwrap();
    for round in 0..rounds {
        let mut mtr = Mtr::new(store.pool()).unwrap();
        for &page in pages.iter().skip(round % 3).step_by(3).take(30) {
            let handle = mtr.latch(&space, page).unwrap();
            let bytes = mtr.page_mut(handle);
            let value = read_u64(bytes, HEADER_SIZE + 8);
            write_u64(bytes, HEADER_SIZE + 8, value + 1);
        }
        mtr.commit();
    }
    store.sync_log().unwrap();
}

fn expected(pages: usize, rounds: usize) -> Vec<u64> {
    (0..pages)
        .map(|i| {
            (0..rounds)
                .filter(|round| i % 3 == round % 3 && i >= round % 3 && (i - round % 3) / 3 < 30)
                .count() as u64
        })
        .collect()
}

#[test]
fn flushed_changes_survive_losing_every_dirty_page() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let pages = setup(&vfs, 100);
    increment_and_crash(&vfs, &pages, 50);
    let store = Store::open(vfs.clone(), &config()).unwrap();
    let space = store.space(1).unwrap();
    let values: Vec<u64> = pages.iter().map(|&p| counter(&store, &space, p)).collect();
    assert_eq!(values, expected(pages.len(), 50));
    assert!(store.wal_stats().checkpoint_lsn > 0);
}

/// The pages were last written at the close in `setup`, through the doublewrite area; one of them
/// is then torn on disk as a crash during that write would leave it.
#[test]
fn a_torn_page_is_restored_from_the_doublewrite_area_and_replayed() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let pages = setup(&vfs, 20);
    increment_and_crash(&vfs, &pages, 9);
    let torn = pages[4];
    let file = vfs.open(&Space::file_name(1), false).unwrap();
    let offset = torn as u64 * PAGE as u64;
    file.write_at(&[0xA5; PAGE / 2], offset + PAGE as u64 / 2)
        .unwrap();
    let store = Store::open(vfs.clone(), &config()).unwrap();
    let space = store.space(1).unwrap();
    let values: Vec<u64> = pages.iter().map(|&p| counter(&store, &space, p)).collect();
    assert_eq!(values, expected(pages.len(), 9));
    store.close().unwrap();
    let reopened = Store::open(vfs, &config()).unwrap();
    assert_eq!(
        counter(&reopened, &reopened.space(1).unwrap(), torn),
        expected(20, 9)[4]
    );
}

/// A page freed and taken again for a page its mini-transaction spills (as a long overflow chain
/// does) can reach disk before the record that formats it. Recovery must then skip the page
/// operations of its previous life, not replay them onto the new contents. The old life here ends
/// with a checkpoint whose redo point is the page's own LSN; the next change is logged as page
/// operations (never as a full image).
#[test]
fn a_reused_page_spilled_to_disk_early_skips_the_redo_of_its_old_life() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let store = Store::open(vfs.clone(), &config()).unwrap();
    let space = store.create_space().unwrap();
    let mut mtr = Mtr::new(store.pool()).unwrap();
    let segment = space.create_segment(&mut mtr).unwrap();
    let page_no = space.allocate_page(&mut mtr, segment).unwrap();
    let handle = mtr.create(&space, page_no).unwrap();
    mtr.edit(handle)
        .format(PageType::Leaf, space.id(), page_no, 9, 0);
    mtr.commit();
    let insert = |record: &[u8]| {
        let mut mtr = Mtr::new(store.pool()).unwrap();
        let handle = mtr.latch(&space, page_no).unwrap();
        let mut page = mtr.edit(handle);
        let at = page.view().slot_count();
        page.insert(at, record).unwrap();
        mtr.commit()
    };
    let changed = insert(b"old life, before the checkpoint");
    store.checkpoint().unwrap();
    assert_eq!(store.wal_stats().checkpoint_lsn, changed);
    let full_images = store.wal_stats().full_page_images;
    insert(b"old life, logged as page operations");
    assert_eq!(store.wal_stats().full_page_images, full_images);

    let mut mtr = Mtr::new(store.pool()).unwrap();
    space.free_page(&mut mtr, page_no).unwrap();
    mtr.commit();
    let mut mtr = Mtr::new(store.pool()).unwrap();
    assert_eq!(space.allocate_page(&mut mtr, segment).unwrap(), page_no);
    let handle = mtr.create(&space, page_no).unwrap();
    PageMut::new(mtr.page_mut(handle)).format(PageType::Overflow, space.id(), page_no, 0, 0);
    mtr.page_mut(handle)[HEADER_SIZE..].fill(0xEE);
    mtr.spill_fresh(handle);
    mtr.commit();
    store.pool().flush_all().unwrap();
    store.sync_log().unwrap();
    drop(store);

    let store = Store::open(vfs, &config()).unwrap();
    let space = store.space(1).unwrap();
    let page = store
        .pool()
        .fetch_read(&space, page_no, AccessHint::Normal)
        .unwrap();
    assert!(page[HEADER_SIZE..].iter().all(|&b| b == 0xEE));
}

/// A bulk-built tree is checkpointed (every page written through the doublewrite area), changed,
/// and the log synced; then every page of its file is torn on disk: recovery puts each back from
/// the area and replays the changes onto it (they are logged as operations, not images), and the
/// tree holds every key with its newest value.
#[test]
fn torn_btree_pages_are_restored_from_the_doublewrite_area_and_replayed() {
    use steady_storage::btree::BTree;
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let key = |n: u32| format!("key-{n:08}").into_bytes();
    let keys = 3_000u32;
    {
        let store = Store::open(vfs.clone(), &config()).unwrap();
        let space = store.create_space().unwrap();
        let entries = (0..keys).map(|n| Ok((key(n), b"built".to_vec())));
        let tree = BTree::bulk_build(store.pool().clone(), space, 7, entries, &mut |_| {}).unwrap();
        store.checkpoint().unwrap();
        let images = store.wal_stats().full_page_images;
        for n in (0..keys).step_by(7) {
            tree.insert(&key(n), b"changed after the checkpoint")
                .unwrap();
        }
        store.sync_log().unwrap();
        assert_eq!(store.wal_stats().full_page_images, images);
        // Crash: dirty pages are never written.
    }
    let file = vfs.open(&Space::file_name(1), false).unwrap();
    let pages = file.file_len().unwrap() / PAGE as u64;
    for page in 3..pages {
        file.write_at(&[0xA5; PAGE / 2], page * PAGE as u64 + PAGE as u64 / 4)
            .unwrap();
    }
    let store = Store::open(vfs.clone(), &config()).unwrap();
    let tree = BTree::open(store.pool().clone(), store.space(1).unwrap(), 7).unwrap();
    for n in 0..keys {
        let expected: &[u8] = if n % 7 == 0 {
            b"changed after the checkpoint"
        } else {
            b"built"
        };
        assert_eq!(
            tree.get(&key(n)).unwrap().as_deref(),
            Some(expected),
            "key {n}"
        );
    }
    assert!(tree.get(&key(keys)).unwrap().is_none());
}

/// Checkpoints taken one after another while the background flusher runs its own spread ones,
/// each followed by a shrink of the free extents at the end of the space, as scratch trees grow
/// there and are dropped: when the store is dropped without a checkpoint of its own (a crash after
/// the log is synced), recovery starts from the newest checkpoint recorded, finds in the files
/// every page it replays a change onto, and the kept tree holds every key.
#[test]
fn checkpoints_beside_spread_ones_and_shrinks_leave_a_recoverable_directory() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use steady_storage::btree::BTree;
    const ROUNDS: u64 = 12;
    const KEYS: u64 = 6_000;
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let config = StoreConfig {
        background_flush: true,
        buffer_pool_bytes: 512 * PAGE,
        ..config()
    };
    let key = |round: u64, n: u64| format!("{round:04}-{n:08}").into_bytes();
    let value = [0x5A; 200];
    {
        let store = Store::open(vfs.clone(), &config).unwrap();
        let space = store.create_space().unwrap();
        let kept = BTree::create(store.pool().clone(), space.clone(), 1).unwrap();
        let writing = AtomicBool::new(true);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while writing.load(Ordering::Acquire) {
                    store.checkpoint().unwrap();
                }
            });
            for round in 0..ROUNDS {
                let scratch =
                    BTree::create(store.pool().clone(), space.clone(), 100 + round).unwrap();
                for n in 0..KEYS {
                    scratch.insert(&key(round, n), &value).unwrap();
                    if n % 16 == 0 {
                        kept.insert(&key(round, n), &value[..8]).unwrap();
                    }
                }
                drop(scratch);
                let mut mtr = Mtr::new(store.pool()).unwrap();
                space.drop_tree(&mut mtr, 100 + round).unwrap();
                mtr.commit();
            }
            writing.store(false, Ordering::Release);
        });
        store.sync_log().unwrap();
    }
    let store = Store::open(vfs.clone(), &config).unwrap();
    let kept = BTree::open(store.pool().clone(), store.space(1).unwrap(), 1).unwrap();
    for round in 0..ROUNDS {
        for n in (0..KEYS).step_by(16) {
            assert_eq!(
                kept.get(&key(round, n)).unwrap().as_deref(),
                Some(&value[..8]),
                "round {round} key {n}"
            );
        }
    }
}
