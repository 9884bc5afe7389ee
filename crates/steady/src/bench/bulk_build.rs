//! `bulk-build`: building a B+tree from sorted input bottom up against inserting the same keys one
//! at a time (seed 001).
//!
//! Both trees are built in the same run, from the same sorted entries, into the same kind of space,
//! and each ends with the log made durable. Reported: the size of the bulk-built tree, the redo log
//! it wrote (goal: at most 1.1x the tree), and both times (goal: the bulk build at least 3x faster).

use std::time::Instant;

use steady_storage::btree::BTree;
use steady_storage::store::{Store, StoreConfig};

use super::{Phases, Report};

const VALUE_LEN: usize = 100;

fn entry(i: u64) -> (Vec<u8>, Vec<u8>) {
    (i.to_be_bytes().to_vec(), vec![(i % 251) as u8; VALUE_LEN])
}

pub fn run(scale: f64, phases: &Phases) -> anyhow::Result<Report> {
    let count = ((1_000_000.0 * scale) as u64).max(10_000);
    let dir = tempfile::tempdir()?;
    let store = Store::open_dir(dir.path(), &StoreConfig::default())?;
    let page_size = store.page_size() as f64;

    phases.now(&format!("building a tree of {count} entries bottom up"));
    let log_before = store.wal_stats().current_lsn;
    let images_before = store.wal_stats().full_page_images;
    let started = Instant::now();
    let entries = (0..count).map(|i| Ok(entry(i)));
    let built = BTree::bulk_build(
        store.pool().clone(),
        store.create_space()?,
        1,
        entries,
        &mut |_| {},
    )?;
    store.sync_log()?;
    let bulk_secs = started.elapsed().as_secs_f64();
    let log_bytes = (store.wal_stats().current_lsn - log_before) as f64;
    let images = store.wal_stats().full_page_images - images_before;
    let shape = built.stats()?;
    let tree_bytes = (shape.leaf_pages + shape.branch_pages) as f64 * page_size;

    phases.now(&format!("inserting the {count} entries one at a time"));
    let inserted = BTree::create(store.pool().clone(), store.create_space()?, 2)?;
    let log_before = store.wal_stats().current_lsn;
    let started = Instant::now();
    for i in 0..count {
        let (key, value) = entry(i);
        inserted.insert(&key, &value)?;
    }
    store.sync_log()?;
    let insert_secs = started.elapsed().as_secs_f64();
    let insert_log_bytes = (store.wal_stats().current_lsn - log_before) as f64;

    let mib = (1u64 << 20) as f64;
    let log_ratio = log_bytes / tree_bytes;
    let speedup = insert_secs / bulk_secs;
    let mut report = Report::new("bulk-build");
    report.figure("entries", count as f64, "rows");
    report.figure("bulk-built tree size", tree_bytes / mib, "MiB");
    report.figure("bulk build: redo log written", log_bytes / mib, "MiB");
    report.figure("bulk build: log / tree size", log_ratio, "x");
    report.figure(
        "bulk build: full page images logged",
        images as f64,
        "pages",
    );
    report.figure("bulk build time", bulk_secs, "s");
    report.figure("one-at-a-time insert time", insert_secs, "s");
    report.figure(
        "one-at-a-time insert: redo log written",
        insert_log_bytes / mib,
        "MiB",
    );
    report.figure("bulk build speedup", speedup, "x");
    report.goal(
        format!("log written <= 1.1x the tree size ({log_ratio:.2}x)"),
        log_ratio <= 1.1,
    );
    report.goal(
        format!("bulk build >= 3x faster than inserting ({speedup:.1}x)"),
        speedup >= 3.0,
    );
    drop((built, inserted));
    store.close()?;
    Ok(report)
}
