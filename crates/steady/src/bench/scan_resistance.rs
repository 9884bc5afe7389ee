//! `scan-resistance`: a full scan must not push the hot set out of the buffer pool (seed 003).
//!
//! A pool of 1,000 frames; a hot tree of about 10% of the pool read by random point lookups; a big
//! tree of about 10x the pool. The hit rate of the hot lookups is measured alone (idle), then while one
//! full scan of the big tree runs, interleaved with the lookups in one thread so that every page read
//! is attributed exactly: the misses counted are those of the hot lookups only.

use std::ops::Bound;
use std::time::Instant;

use rand::{rngs::StdRng, Rng, SeedableRng};
use steady_storage::btree::BTree;
use steady_storage::buffer_pool::BufferPool;
use steady_storage::store::{Store, StoreConfig};

use super::{Phases, Report};

const PAGE_SIZE: usize = 4096;
const POOL_FRAMES: usize = 1000;
const VALUE: [u8; 100] = [b'v'; 100];

pub fn run(scale: f64, phases: &Phases) -> anyhow::Result<Report> {
    let dir = tempfile::tempdir()?;
    let config = StoreConfig {
        page_size: PAGE_SIZE,
        buffer_pool_bytes: POOL_FRAMES * PAGE_SIZE,
        ..Default::default()
    };
    let store = Store::open_dir(dir.path(), &config)?;
    let hot = BTree::create(store.pool().clone(), store.create_space()?, 1)?;
    let big = BTree::create(store.pool().clone(), store.create_space()?, 2)?;
    phases.now("loading a hot tree and a tree 10x the pool");
    let hot_keys = fill_until(&hot, |t| leaf_pages(t) >= POOL_FRAMES / 10)?;
    let big_target = ((POOL_FRAMES * 10) as f64 * scale) as usize;
    let big_keys = fill_until(&big, |t| leaf_pages(t) >= big_target)?;
    store.checkpoint()?;
    let pool = store.pool();
    let mut rng = StdRng::seed_from_u64(7);
    for key in 0..hot_keys {
        hot.get(&key_bytes(key))?;
        hot.get(&key_bytes(key))?;
    }
    phases.now("hot lookups, idle and beside a scan");
    let lookups = 20_000;
    let idle = measure(pool, || lookup_batch(&hot, hot_keys, lookups, &mut rng))?;

    let mut scan = Counted::default();
    let mut scanned = 0u64;
    let started = Instant::now();
    let mut batch = 0;
    for entry in big.range(Bound::Unbounded, Bound::Unbounded) {
        entry?;
        scanned += 1;
        batch += 1;
        if batch == 20 {
            batch = 0;
            scan.add(measure(pool, || {
                lookup_batch(&hot, hot_keys, 10, &mut rng)
            })?);
        }
    }
    let scan_secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        scanned == big_keys,
        "scan returned {scanned} of {big_keys} entries"
    );

    let (idle_rate, scan_rate) = (idle.hit_rate(), scan.hit_rate());
    let mut report = Report::new("scan-resistance");
    report.figure("pool frames", POOL_FRAMES as f64, "pages");
    report.figure("hot tree leaf pages", leaf_pages(&hot) as f64, "pages");
    report.figure("big tree leaf pages", leaf_pages(&big) as f64, "pages");
    report.figure("hot hit rate, idle", idle_rate * 100.0, "%");
    report.figure("hot hit rate, during scan", scan_rate * 100.0, "%");
    report.figure("hot lookups during scan", scan.lookups as f64, "lookups");
    report.figure("scan entries", scanned as f64, "rows");
    report.figure("scan time", scan_secs, "s");
    report.figure(
        "read-ahead reads",
        pool.stats().read_ahead_reads as f64,
        "pages",
    );
    report.goal(
        "hot hit rate during the scan within 10% of idle".into(),
        scan_rate >= idle_rate * 0.9,
    );
    store.close()?;
    Ok(report)
}

fn key_bytes(key: u64) -> [u8; 8] {
    key.to_be_bytes()
}

fn leaf_pages(tree: &BTree) -> usize {
    tree.stats().map(|s| s.leaf_pages).unwrap_or(0)
}

/// Inserts ascending keys until `done` says the tree is big enough; returns the key count.
fn fill_until(tree: &BTree, done: impl Fn(&BTree) -> bool) -> anyhow::Result<u64> {
    let mut key = 0u64;
    loop {
        for _ in 0..1000 {
            tree.insert(&key_bytes(key), &VALUE)?;
            key += 1;
        }
        if done(tree) {
            return Ok(key);
        }
    }
}

fn lookup_batch(tree: &BTree, keys: u64, count: usize, rng: &mut StdRng) -> anyhow::Result<u64> {
    for _ in 0..count {
        let key = rng.gen_range(0..keys);
        anyhow::ensure!(
            tree.get(&key_bytes(key))?.is_some(),
            "hot key {key} missing"
        );
    }
    Ok(count as u64)
}

/// Page requests and physical reads attributed to a set of lookups.
#[derive(Default, Clone, Copy)]
struct Counted {
    lookups: u64,
    requests: u64,
    reads: u64,
}

impl Counted {
    fn add(&mut self, other: Counted) {
        self.lookups += other.lookups;
        self.requests += other.requests;
        self.reads += other.reads;
    }
    fn hit_rate(&self) -> f64 {
        1.0 - self.reads as f64 / self.requests.max(1) as f64
    }
}

fn measure(
    pool: &BufferPool,
    work: impl FnOnce() -> anyhow::Result<u64>,
) -> anyhow::Result<Counted> {
    let before = pool.stats();
    let lookups = work()?;
    let after = pool.stats();
    Ok(Counted {
        lookups,
        requests: after.read_requests - before.read_requests,
        reads: after.reads - before.reads,
    })
}
