//! `drop-space`: invalidating a space whose pages fill the pool must be O(1) (seed 004).
//!
//! Loads 100,000 pages of one space into the pool (half of them dirty), invalidates the space, and
//! reports how long that took, that no stale dirty page is written afterwards, and that every later
//! access to those pages is a miss. Then it loads another space's pages and reports that the stale
//! frames were recycled by the ordinary replacement policy.

use std::sync::Arc;
use std::time::Instant;

use steady_storage::buffer_pool::{AccessHint, BufferPool, PoolConfig};
use steady_storage::io::OsVfs;
use steady_storage::mtr::Mtr;
use steady_storage::page::{PageMut, PageType};
use steady_storage::space::Space;
use steady_storage::PageNo;

use super::{Phases, Report};

const PAGE_SIZE: usize = 4096;

pub fn run(scale: f64, phases: &Phases) -> anyhow::Result<Report> {
    let pages = ((100_000.0 * scale) as usize).max(1000);
    let dir = tempfile::tempdir()?;
    let vfs = OsVfs::new(dir.path(), false)?;
    let mut config = PoolConfig::with_budget(PAGE_SIZE, (pages + pages / 5) * PAGE_SIZE);
    config.background_flush = false;
    let pool = BufferPool::new(config)?;
    let dropped = Space::create(&vfs, 1, PAGE_SIZE)?;
    phases.now(&format!("filling the pool with {pages} pages"));
    let page_numbers = fill(&pool, &dropped, pages)?;
    pool.flush_all()?;
    redirty_half(&pool, &dropped, &page_numbers)?;
    let dirty_before = pool.stats().dirty_pages;
    let resident = page_numbers
        .iter()
        .filter(|&&p| pool.contains(&dropped, p))
        .count();

    phases.now("dropping the space and loading another");
    let started = Instant::now();
    dropped.invalidate();
    let invalidate_us = started.elapsed().as_secs_f64() * 1e6;

    let written_before = pool.stats().pages_written;
    pool.flush_all()?;
    let stale_written = pool.stats().pages_written - written_before;
    let still_cached = page_numbers
        .iter()
        .filter(|&&p| pool.contains(&dropped, p))
        .count();
    let sample: Vec<PageNo> = page_numbers.iter().step_by(100).copied().collect();
    let reads_before = pool.stats().reads;
    for &page_no in &sample {
        drop(pool.fetch_read(&dropped, page_no, AccessHint::Normal)?);
    }
    let sample_misses = pool.stats().reads - reads_before;

    let other = Space::create(&vfs, 2, PAGE_SIZE)?;
    let started = Instant::now();
    fill(&pool, &other, pages)?;
    let refill_ms = started.elapsed().as_secs_f64() * 1e3;
    let other_resident = (0..other.size_in_pages())
        .filter(|&p| pool.contains(&other, p))
        .count();

    let mut report = Report::new("drop-space");
    report.figure("pages of the space in the pool", resident as f64, "pages");
    report.figure("of which dirty", dirty_before as f64, "pages");
    report.figure("invalidate (drop/truncate) time", invalidate_us, "us");
    report.figure(
        "stale pages still valid after",
        still_cached as f64,
        "pages",
    );
    report.figure(
        "stale dirty pages written after",
        stale_written as f64,
        "pages",
    );
    report.figure(
        "sampled accesses after drop",
        sample.len() as f64,
        "fetches",
    );
    report.figure("  of which misses", sample_misses as f64, "reads");
    report.figure(
        "other space's pages loaded after",
        other_resident as f64,
        "pages",
    );
    report.figure("  time to load them", refill_ms, "ms");
    report.goal(
        format!(
            "invalidating {resident} cached pages takes well under 1 ms ({invalidate_us:.1} us)"
        ),
        invalidate_us < 1000.0,
    );
    report.goal(
        "every later access to the dropped pages misses, none is written".into(),
        still_cached == 0 && sample_misses == sample.len() as u64 && stale_written == 0,
    );
    Ok(report)
}

/// Allocates and formats `pages` pages of `space` through the pool (they stay cached).
fn fill(pool: &Arc<BufferPool>, space: &Arc<Space>, pages: usize) -> anyhow::Result<Vec<PageNo>> {
    let mut mtr = Mtr::new(pool)?;
    let segment = space.create_segment(&mut mtr)?;
    mtr.commit();
    let mut numbers = Vec::with_capacity(pages);
    for chunk in 0..pages.div_ceil(256) {
        let mut mtr = Mtr::new(pool)?;
        for _ in 0..256.min(pages - chunk * 256) {
            let page_no = space.allocate_page(&mut mtr, segment)?;
            let handle = mtr.create(space, page_no)?;
            PageMut::new(mtr.page_mut(handle)).format(PageType::Leaf, space.id(), page_no, 1, 0);
            numbers.push(page_no);
        }
        mtr.commit();
    }
    Ok(numbers)
}

fn redirty_half(
    pool: &Arc<BufferPool>,
    space: &Arc<Space>,
    pages: &[PageNo],
) -> anyhow::Result<()> {
    for &page_no in pages.iter().step_by(2) {
        let mut mtr = Mtr::new(pool)?;
        let handle = mtr.latch(space, page_no)?;
        PageMut::new(mtr.page_mut(handle))
            .insert(0, b"dirty")
            .map_err(|_| anyhow::anyhow!("page {page_no} is full"))?;
        mtr.commit();
    }
    Ok(())
}
