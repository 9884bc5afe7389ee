//! Buffer pool behaviour: scan resistance, space invalidation, corruption on read, many threads
//! updating pages through a pool far smaller than the data, and per-thread hit and read counters.

use std::sync::Arc;

use steady_storage::buffer_pool::{thread_io, AccessHint, BufferPool, PoolConfig, ThreadIo};
use steady_storage::io::{MemVfs, OsVfs, Vfs};
use steady_storage::mtr::Mtr;
use steady_storage::page::{read_u64, write_u64, PageMut, PageType, HEADER_SIZE};
use steady_storage::space::Space;
use steady_storage::{PageNo, StorageError};

const PAGE: usize = 4096;

fn pool(frames: usize) -> Arc<BufferPool> {
    let mut config = PoolConfig::with_budget(PAGE, frames * PAGE);
    config.background_flush = false;
    BufferPool::new(config).unwrap()
}

/// Allocates and formats `count` pages, each holding its own number as a counter seed.
fn make_pages(pool: &Arc<BufferPool>, space: &Arc<Space>, count: usize) -> Vec<PageNo> {
    let mut mtr = Mtr::new(pool).unwrap();
    let segment = space.create_segment(&mut mtr).unwrap();
    mtr.commit();
    let mut pages = Vec::new();
    for _ in 0..count {
        let mut mtr = Mtr::new(pool).unwrap();
        let page_no = space.allocate_page(&mut mtr, segment).unwrap();
        let handle = mtr.create(space, page_no).unwrap();
        let page = mtr.page_mut(handle);
        PageMut::new(page).format(PageType::Leaf, space.id(), page_no, 1, 0);
        write_u64(page, HEADER_SIZE + 8, 0);
        mtr.commit();
        pages.push(page_no);
    }
    pool.flush_all().unwrap();
    pages
}

#[test]
fn a_scan_does_not_push_out_the_hot_set() {
    let vfs = MemVfs::new();
    let space = Space::create(&vfs, 1, PAGE).unwrap();
    let pool = pool(200);
    let pages = make_pages(&pool, &space, 2200);
    let (hot, cold) = pages.split_at(20);
    for _ in 0..3 {
        for &p in hot {
            drop(pool.fetch_read(&space, p, AccessHint::Normal).unwrap());
        }
    }
    let reads_before = pool.stats().reads;
    for (i, &p) in cold.iter().enumerate() {
        drop(pool.fetch_read(&space, p, AccessHint::Scan).unwrap());
        let h = hot[i % hot.len()];
        drop(pool.fetch_read(&space, h, AccessHint::Normal).unwrap());
    }
    let reads = pool.stats().reads - reads_before;
    assert_eq!(
        reads,
        cold.len() as u64,
        "only the scanned pages were read, every hot access hit"
    );
    assert!(hot.iter().all(|&p| pool.contains(&space, p)));
    assert!(pool.stats().evictions > 1500);
}

#[test]
fn invalidated_pages_miss_and_are_never_written() {
    let vfs = MemVfs::new();
    let space = Space::create(&vfs, 1, PAGE).unwrap();
    let pool = pool(64);
    let pages = make_pages(&pool, &space, 40);
    let mut mtr = Mtr::new(&pool).unwrap();
    let handle = mtr.latch(&space, pages[0]).unwrap();
    write_u64(mtr.page_mut(handle), HEADER_SIZE + 8, 99);
    mtr.commit();
    space.invalidate();
    assert!(pages.iter().all(|&p| !pool.contains(&space, p)));
    let written = pool.stats().pages_written;
    pool.flush_all().unwrap();
    assert_eq!(
        pool.stats().pages_written,
        written,
        "stale dirty page was written"
    );
    let reads = pool.stats().reads;
    let page = pool
        .fetch_read(&space, pages[0], AccessHint::Normal)
        .unwrap();
    assert_eq!(
        read_u64(&page, HEADER_SIZE + 8),
        0,
        "the change made before invalidation is gone"
    );
    assert_eq!(pool.stats().reads, reads + 1);
    drop(page);
    space.mark_dropped();
    assert!(matches!(
        pool.fetch_read(&space, pages[1], AccessHint::Normal),
        Err(StorageError::SpaceDropped(1))
    ));
}

#[test]
fn a_flipped_byte_is_an_error_naming_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let vfs = OsVfs::new(dir.path(), false).unwrap();
    let space = Space::create(&vfs, 3, PAGE).unwrap();
    let pool = pool(64);
    let pages = make_pages(&pool, &space, 5);
    drop(pool);
    let file = vfs.open(&Space::file_name(3), false).unwrap();
    let victim = pages[2];
    let offset = victim as u64 * PAGE as u64 + 1000;
    let mut byte = [0u8; 1];
    file.read_at(&mut byte, offset).unwrap();
    file.write_at(&[byte[0] ^ 1], offset).unwrap();
    let pool = self::pool(64);
    let space = Space::open(&vfs, 3).unwrap();
    let err = pool
        .fetch_read(&space, victim, AccessHint::Normal)
        .err()
        .expect("corruption detected");
    assert!(
        err.to_string()
            .contains(&format!("page {victim} of space 3")),
        "{err}"
    );
    assert!(pool
        .fetch_read(&space, pages[1], AccessHint::Normal)
        .is_ok());
    assert!(
        pool.fetch_read(&space, victim, AccessHint::Normal).is_err(),
        "a failed load is not cached"
    );
}

#[test]
fn threads_updating_pages_through_a_small_pool_lose_nothing() {
    let vfs = MemVfs::new();
    let space = Space::create(&vfs, 1, PAGE).unwrap();
    let pool = pool(32);
    let pages = make_pages(&pool, &space, 300);
    let threads = 4;
    let rounds = 3000;
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (pool, space, pages) = (&pool, &space, &pages);
            scope.spawn(move || {
                for i in 0..rounds {
                    let p = pages[(i * 7 + t * 13) % pages.len()];
                    let mut mtr = Mtr::new(pool).unwrap();
                    let handle = mtr.latch(space, p).unwrap();
                    let page = mtr.page_mut(handle);
                    let count = read_u64(page, HEADER_SIZE + 8);
                    write_u64(page, HEADER_SIZE + 8, count + 1);
                    mtr.commit();
                    let other = pages[(i * 11 + t) % pages.len()];
                    drop(pool.fetch_read(space, other, AccessHint::Normal).unwrap());
                }
            });
        }
    });
    let total: u64 = pages
        .iter()
        .map(|&p| {
            read_u64(
                &pool.fetch_read(&space, p, AccessHint::Normal).unwrap(),
                HEADER_SIZE + 8,
            )
        })
        .sum();
    assert_eq!(total, (threads * rounds) as u64);
    assert!(pool.stats().evictions > 0 && pool.stats().pages_written > 0);
}

#[test]
fn each_thread_counts_only_its_own_hits_and_reads() {
    let vfs = MemVfs::new();
    let space = Space::create(&vfs, 1, PAGE).unwrap();
    let pages = make_pages(&pool(64), &space, 10);
    let pool = pool(64);
    let space = Space::open(&vfs, 1).unwrap();
    let fetch_all = |rounds: usize| {
        let before = thread_io();
        for _ in 0..rounds {
            for &p in &pages {
                drop(pool.fetch_read(&space, p, AccessHint::Normal).unwrap());
            }
        }
        thread_io().since(before)
    };
    let main_before = thread_io();
    let first = std::thread::scope(|scope| scope.spawn(|| fetch_all(3)).join().unwrap());
    assert_eq!(
        first,
        ThreadIo {
            hits: 20,
            reads: 10,
            read_ahead: 0
        },
        "a cold pool, then two warm rounds"
    );
    let second = std::thread::scope(|scope| scope.spawn(|| fetch_all(1)).join().unwrap());
    assert_eq!(
        second,
        ThreadIo {
            hits: 10,
            reads: 0,
            read_ahead: 0
        },
        "the first thread's reads are not ours"
    );
    assert_eq!(
        thread_io(),
        main_before,
        "other threads' requests are not the main thread's"
    );
    assert_eq!(pool.stats().reads, 10);
    assert_eq!(
        fetch_all(1),
        ThreadIo {
            hits: 10,
            reads: 0,
            read_ahead: 0
        }
    );
    assert_eq!(
        ThreadIo::default().since(first),
        ThreadIo::default(),
        "saturating"
    );
}
