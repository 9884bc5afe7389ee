//! `group-commit`: one log fsync must serve every commit waiting for it.
//!
//! Each committer changes its own page in a mini-transaction and waits until the change is durable.
//! The same work runs with one thread and with eight, for the same time, on a real file system; the
//! figures are commits per second, the ratio, and log fsyncs per commit.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use steady_storage::mtr::Mtr;
use steady_storage::page::{read_u64, write_u64, PageMut, PageType, HEADER_SIZE};
use steady_storage::space::Space;
use steady_storage::store::{Store, StoreConfig};
use steady_storage::PageNo;

use super::{Phases, Report};

const THREADS: usize = 8;

pub fn run(scale: f64, phases: &Phases) -> anyhow::Result<Report> {
    let seconds = (5.0 * scale).max(0.5);
    let dir = tempfile::tempdir()?;
    let store = Store::open_dir(dir.path(), &StoreConfig::default())?;
    let space = store.create_space()?;
    let pages = make_pages(&store, &space, THREADS)?;
    store.checkpoint()?;
    phases.now(&format!(
        "committing from 1 thread, then {THREADS}, {seconds} s each"
    ));
    let single = run_committers(&store, &space, &pages[..1], seconds)?;
    let group = run_committers(&store, &space, &pages, seconds)?;
    let ratio = group.per_second / single.per_second;
    let mut report = Report::new("group-commit");
    report.figure(
        "1 thread: commits/s",
        single.per_second.round(),
        "commits/s",
    );
    report.figure(
        "1 thread: fsyncs per commit",
        single.fsyncs_per_commit,
        "fsyncs",
    );
    report.figure(
        "8 threads: commits/s",
        group.per_second.round(),
        "commits/s",
    );
    report.figure(
        "8 threads: fsyncs per commit",
        group.fsyncs_per_commit,
        "fsyncs",
    );
    report.figure("8 threads / 1 thread", ratio, "x");
    report.goal(
        format!("8 threads reach >= 4x the commits/s of one ({ratio:.1}x)"),
        ratio >= 4.0,
    );
    store.close()?;
    Ok(report)
}

struct Throughput {
    per_second: f64,
    fsyncs_per_commit: f64,
}

fn make_pages(store: &Store, space: &Arc<Space>, count: usize) -> anyhow::Result<Vec<PageNo>> {
    let mut mtr = Mtr::new(store.pool())?;
    let segment = space.create_segment(&mut mtr)?;
    let mut pages = Vec::new();
    for _ in 0..count {
        let page_no = space.allocate_page(&mut mtr, segment)?;
        let handle = mtr.create(space, page_no)?;
        PageMut::new(mtr.page_mut(handle)).format(PageType::Leaf, space.id(), page_no, 1, 0);
        pages.push(page_no);
    }
    mtr.commit();
    Ok(pages)
}

fn run_committers(
    store: &Store,
    space: &Arc<Space>,
    pages: &[PageNo],
    seconds: f64,
) -> anyhow::Result<Throughput> {
    let stop = AtomicBool::new(false);
    let commits = AtomicU64::new(0);
    let fsyncs_before = store.wal_stats().fsyncs;
    let started = Instant::now();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let workers: Vec<_> = pages
            .iter()
            .map(|&page| {
                let (stop, commits) = (&stop, &commits);
                scope.spawn(move || commit_loop(store, space, page, stop, commits))
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
        for worker in workers {
            worker.join().expect("committer panicked")?;
        }
        Ok(())
    })?;
    let elapsed = started.elapsed().as_secs_f64();
    let commits = commits.load(Ordering::Relaxed);
    let fsyncs = store.wal_stats().fsyncs - fsyncs_before;
    Ok(Throughput {
        per_second: commits as f64 / elapsed,
        fsyncs_per_commit: fsyncs as f64 / commits.max(1) as f64,
    })
}

fn commit_loop(
    store: &Store,
    space: &Arc<Space>,
    page: PageNo,
    stop: &AtomicBool,
    commits: &AtomicU64,
) -> anyhow::Result<()> {
    while !stop.load(Ordering::Relaxed) {
        let mut mtr = Mtr::new(store.pool())?;
        let handle = mtr.latch(space, page)?;
        let bytes = mtr.page_mut(handle);
        let value = read_u64(bytes, HEADER_SIZE + 8);
        write_u64(bytes, HEADER_SIZE + 8, value + 1);
        let lsn = mtr.commit();
        store.pool().make_durable(lsn)?;
        commits.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}
