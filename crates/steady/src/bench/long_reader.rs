//! `long-reader`: a long REPEATABLE READ reader beside writers of hot rows (seed 002).
//!
//! PostgreSQL keeps old versions in the table and InnoDB chains them through undo, so one open
//! snapshot makes scans slower, lookups walk long chains, and history grows until the snapshot ends.
//! Here each part is measured within one run, on one engine in a fresh directory (default
//! configuration, background purge on, every commit durable):
//!
//! * **Scan time.** A table of 1,000,000 rows (100 bytes: a u64 `k` and padding, 8-byte big-endian
//!   keys). One REPEATABLE READ transaction sums `k` over the whole table [`SCANS`] times with no
//!   writers (idle), then another does the same while 8 writers run small READ COMMITTED
//!   transactions that add 1 to `k` in two rows each, 80% of them in the hot fifth of the table
//!   (every fifth row). Goal: mean scan time under load at most 1.5x idle. Each transaction's sums
//!   must all be equal (it sees one snapshot). Beside the times, the scanning thread's CPU time
//!   (Linux only): where the writers outnumber the cores, it tells the scan's own work (reading
//!   history) from waiting for a core.
//! * **One-seek history.** A REPEATABLE READ snapshot reads a row, then the row is updated in
//!   1,000,000 transactions of its own. Point lookups of the row at that oldest snapshot are timed
//!   against lookups at a new snapshot, alternating in rounds. Goal: at most 3x.
//! * **Writer throughput.** The writers run for 60 s without a snapshot, then for 60 s while an
//!   idle REPEATABLE READ snapshot is held open. Goal: commits/s with it at least 0.9x without.
//! * **Purge.** History length is sampled while the snapshot is open (its peak) and 30 s after it
//!   closed, the writers still running. Goal: at most 1% of the peak. Beside it, the history length
//!   at the end of the window without a snapshot: the backlog purge runs with under this load.
//!
//! The idle scans run after a checkpoint, so that no write-back of the load competes with them.
//! Pages read (buffer pool misses, of every thread) and redo log bytes are reported beside each
//! time. `--scale s` runs s² of the rows and of the writers' windows (at least 1 s each) and s³ of the
//! versions of the one row (a durable commit each, one after another), so that the small scales
//! stay quick: at 0.1, 10,000 rows, 1,000 versions and windows of 1 s.

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use rand::{rngs::StdRng, Rng, SeedableRng};
use steady_engine::engine::{Engine, EngineConfig, Isolation, Transaction};
use steady_engine::version::IndexId;

use super::{Phases, Report};

/// Bytes of a row: `k` (u64, big-endian), then padding.
const ROW_LEN: usize = 100;
/// Rows inserted per transaction while loading.
const LOAD_BATCH: u64 = 10_000;
const WRITERS: usize = 8;
/// Rows each writer transaction updates.
const ROWS_PER_TXN: usize = 2;
/// Full scans timed idle, and again under load.
const SCANS: usize = 3;
/// Point lookups timed at each snapshot, in `LOOKUP_ROUNDS` alternating rounds.
const LOOKUPS: usize = 20_000;
const LOOKUP_ROUNDS: usize = 10;
/// Time the writers run before anything is measured.
const WARM_UP: Duration = Duration::from_millis(250);
/// How often the history length is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);
pub(super) const MIB: f64 = (1u64 << 20) as f64;

/// The sizes a run uses at a scale.
struct Plan {
    rows: u64,
    versions: u64,
    snapshot_open: Duration,
    after_close: Duration,
}

impl Plan {
    /// Scale 1 is the documented run; see the module doc for the smaller ones.
    fn new(scale: f64) -> Plan {
        let (squared, cubed) = (scale.powi(2), scale.powi(3));
        Plan {
            rows: ((1_000_000.0 * squared) as u64).max(1_000),
            versions: ((1_000_000.0 * cubed) as u64).max(1_000),
            snapshot_open: Duration::from_secs_f64((60.0 * squared).max(1.0)),
            after_close: Duration::from_secs_f64((30.0 * squared).max(1.0)),
        }
    }
}

pub fn run(scale: f64, phases: &Phases) -> anyhow::Result<Report> {
    let plan = Plan::new(scale);
    let dir = tempfile::tempdir()?;
    let engine = Engine::open(dir.path(), &EngineConfig::default())?;
    let index = engine.create_index()?;
    let mut report = Report::new("long-reader");
    report.figure("rows", plan.rows as f64, "rows");
    phases.now(&format!("loading {} rows", plan.rows));
    load(&engine, index, plan.rows)?;
    wait_for_purge(&engine)?;
    engine.store().checkpoint()?;
    phases.now("scans beside hot-row writers");
    scan_figures(&engine, index, &plan, &mut report)?;
    wait_for_purge(&engine)?;
    phases.now("reading old versions");
    history_figures(&engine, index, &plan, &mut report)?;
    wait_for_purge(&engine)?;
    phases.now("writers' throughput with and without the reader");
    throughput_figures(&engine, index, &plan, &mut report)?;
    engine.close()?;
    Ok(report)
}

pub(super) fn key(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

/// A row holding `k`.
pub(super) fn row(k: u64) -> Vec<u8> {
    let mut row = vec![b'.'; ROW_LEN];
    row[..8].copy_from_slice(&k.to_be_bytes());
    row
}

pub(super) fn k_of(row: &[u8]) -> anyhow::Result<u64> {
    let bytes = row.get(..8).context("a row shorter than its k")?;
    Ok(u64::from_be_bytes(bytes.try_into()?))
}

/// Inserts rows `0..rows` with k = 0, `LOAD_BATCH` rows per transaction.
pub(super) fn load(engine: &Arc<Engine>, index: IndexId, rows: u64) -> anyhow::Result<()> {
    for start in (0..rows).step_by(LOAD_BATCH as usize) {
        let mut txn = engine.begin(Isolation::ReadCommitted)?;
        for id in start..(start + LOAD_BATCH).min(rows) {
            txn.insert(index, &key(id), &row(0))?;
        }
        txn.commit()?;
    }
    Ok(())
}

/// Waits until background purge has no committed transaction left, then for the pass that may
/// still be running (`purge_lag` does not count the transactions a running pass holds): a pass of
/// our own waits for it, and finds nothing left.
pub(super) fn wait_for_purge(engine: &Arc<Engine>) -> anyhow::Result<()> {
    while engine.stats().purge_lag > 0 {
        std::thread::sleep(Duration::from_millis(10));
    }
    engine.purge()?;
    Ok(())
}

/// Bytes of redo log written so far.
pub(super) fn log_bytes(engine: &Arc<Engine>) -> u64 {
    engine.store().wal_stats().current_lsn
}

/// Pages read into the buffer pool so far.
pub(super) fn pages_read(engine: &Arc<Engine>) -> u64 {
    engine.store().pool_stats().reads
}

/// One small READ COMMITTED transaction: k += 1 in each row, in key order (so that writers never
/// deadlock).
fn increment(engine: &Arc<Engine>, index: IndexId, ids: &[u64]) -> anyhow::Result<()> {
    let mut txn = engine.begin(Isolation::ReadCommitted)?;
    for &id in ids {
        txn.begin_statement();
        let old = txn
            .lock_row(index, &key(id))?
            .with_context(|| format!("row {id} is missing"))?;
        txn.update(index, &key(id), &row(k_of(&old)? + 1))?;
    }
    txn.commit()?;
    Ok(())
}

/// A row id: 80% of the time one of the hot fifth of the table (every fifth row), else another.
fn pareto_id(rng: &mut StdRng, rows: u64) -> u64 {
    let hot = rng.gen_bool(0.8);
    loop {
        let id = rng.gen_range(0..rows);
        if (id % 5 == 0) == hot {
            return id;
        }
    }
}

/// The writer threads.
struct Writers {
    stop: Arc<AtomicBool>,
    commits: Arc<AtomicU64>,
    threads: Vec<JoinHandle<anyhow::Result<()>>>,
}

impl Writers {
    fn start(engine: &Arc<Engine>, index: IndexId, rows: u64) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let commits = Arc::new(AtomicU64::new(0));
        let threads = (0..WRITERS as u64)
            .map(|seed| {
                let (engine, stop, commits) = (engine.clone(), stop.clone(), commits.clone());
                std::thread::spawn(move || write_loop(&engine, index, rows, seed, &stop, &commits))
            })
            .collect();
        Writers {
            stop,
            commits,
            threads,
        }
    }

    fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    fn stop(mut self) -> anyhow::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        for thread in std::mem::take(&mut self.threads) {
            thread
                .join()
                .map_err(|_| anyhow::anyhow!("a writer thread panicked"))??;
        }
        Ok(())
    }
}

/// One writer: `increment`s of `ROWS_PER_TXN` pareto-chosen rows until `stop`.
fn write_loop(
    engine: &Arc<Engine>,
    index: IndexId,
    rows: u64,
    seed: u64,
    stop: &AtomicBool,
    commits: &AtomicU64,
) -> anyhow::Result<()> {
    let mut rng = StdRng::seed_from_u64(seed);
    while !stop.load(Ordering::Relaxed) {
        let mut ids: Vec<u64> = (0..ROWS_PER_TXN)
            .map(|_| pareto_id(&mut rng, rows))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        increment(engine, index, &ids)?;
        commits.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

impl Drop for Writers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The full scans of one REPEATABLE READ transaction.
struct Scans {
    mean_secs: f64,
    max_secs: f64,
    /// CPU time of the scanning thread per scan (where the OS reports it).
    mean_cpu_secs: Option<f64>,
    pages_read: u64,
}

fn timed_scans(engine: &Arc<Engine>, index: IndexId, rows: u64) -> anyhow::Result<Scans> {
    let mut txn = engine.begin(Isolation::RepeatableRead)?;
    let (reads_before, cpu_before) = (pages_read(engine), thread_cpu_secs());
    let mut secs = Vec::with_capacity(SCANS);
    let mut first_sum = None;
    for _ in 0..SCANS {
        let started = Instant::now();
        let (count, sum) = scan_sum(&mut txn, index)?;
        secs.push(started.elapsed().as_secs_f64());
        anyhow::ensure!(count == rows, "a scan saw {count} of {rows} rows");
        let first = *first_sum.get_or_insert(sum);
        anyhow::ensure!(
            sum == first,
            "one REPEATABLE READ snapshot summed k to {first}, then to {sum}"
        );
    }
    txn.commit()?;
    Ok(Scans {
        mean_secs: secs.iter().sum::<f64>() / SCANS as f64,
        max_secs: secs.iter().copied().fold(0.0, f64::max),
        mean_cpu_secs: cpu_before
            .zip(thread_cpu_secs())
            .map(|(before, after)| (after - before) / SCANS as f64),
        pages_read: pages_read(engine) - reads_before,
    })
}

impl Scans {
    fn cpu_figure(&self, name: &str, report: &mut Report) {
        if let Some(cpu) = self.mean_cpu_secs {
            report.figure(
                &format!("{name}: scanning thread's CPU time (mean)"),
                cpu,
                "s",
            );
        }
    }
}

/// CPU time the calling thread has used, from Linux's schedstat (None elsewhere).
fn thread_cpu_secs() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(nanos as f64 / 1e9)
}

/// One full scan: the rows seen and the sum of their k.
fn scan_sum(txn: &mut Transaction, index: IndexId) -> anyhow::Result<(u64, u64)> {
    let mut count = 0;
    let mut sum = 0;
    for entry in txn.scan(index, Bound::Unbounded, Bound::Unbounded)? {
        let (_, row) = entry?;
        count += 1;
        sum += k_of(&row)?;
    }
    Ok((count, sum))
}

fn scan_figures(
    engine: &Arc<Engine>,
    index: IndexId,
    plan: &Plan,
    report: &mut Report,
) -> anyhow::Result<()> {
    let idle = timed_scans(engine, index, plan.rows)?;
    let writers = Writers::start(engine, index, plan.rows);
    std::thread::sleep(WARM_UP);
    let activity = Activity::start(engine, &writers);
    let loaded = timed_scans(engine, index, plan.rows)?;
    let (commits_per_second, log) = activity.end(engine, &writers);
    let history = engine.stats().history_length;
    writers.stop()?;
    let ratio = loaded.mean_secs / idle.mean_secs;
    report.figure("scan, idle: time (mean)", idle.mean_secs, "s");
    idle.cpu_figure("scan, idle", report);
    report.figure("scan, idle: pages read", idle.pages_read as f64, "pages");
    report.figure("scan under load: time (mean)", loaded.mean_secs, "s");
    report.figure("scan under load: time (slowest)", loaded.max_secs, "s");
    loaded.cpu_figure("scan under load", report);
    report.figure(
        "scan under load: pages read (all threads)",
        loaded.pages_read as f64,
        "pages",
    );
    report.figure(
        "scan under load: writer commits/s",
        commits_per_second.round(),
        "commits/s",
    );
    report.figure("scan under load: log written", log as f64 / MIB, "MiB");
    report.figure(
        "scan under load: history length at the end",
        history as f64,
        "versions",
    );
    report.figure("scan under load / idle", ratio, "x");
    report.goal(
        format!("scan under load <= 1.5x idle ({ratio:.2}x)"),
        ratio <= 1.5,
    );
    Ok(())
}

/// The writers' commits and the log written since a moment.
struct Activity {
    started: Instant,
    commits: u64,
    log: u64,
}

impl Activity {
    fn start(engine: &Arc<Engine>, writers: &Writers) -> Activity {
        Activity {
            started: Instant::now(),
            commits: writers.commits(),
            log: log_bytes(engine),
        }
    }

    /// Commits per second and log bytes since the start.
    fn end(&self, engine: &Arc<Engine>, writers: &Writers) -> (f64, u64) {
        let secs = self.started.elapsed().as_secs_f64();
        let commits = writers.commits() - self.commits;
        (commits as f64 / secs, log_bytes(engine) - self.log)
    }
}

fn history_figures(
    engine: &Arc<Engine>,
    index: IndexId,
    plan: &Plan,
    report: &mut Report,
) -> anyhow::Result<()> {
    let id = plan.rows / 2;
    let mut oldest = engine.begin(Isolation::RepeatableRead)?;
    let original = oldest.get(index, &key(id))?.context("row missing")?;
    let (log, started) = (log_bytes(engine), Instant::now());
    for _ in 0..plan.versions {
        increment(engine, index, &[id])?;
    }
    let build_secs = started.elapsed().as_secs_f64();
    let log = log_bytes(engine) - log;
    let history = engine.stats().history_length;
    let mut fresh = engine.begin(Isolation::RepeatableRead)?;
    let newest = row(k_of(&original)? + plan.versions);
    let reads = pages_read(engine);
    let (mut old_secs, mut new_secs) = (0.0, 0.0);
    for _ in 0..LOOKUP_ROUNDS {
        old_secs += timed_lookups(&mut oldest, index, id, &original)?;
        new_secs += timed_lookups(&mut fresh, index, id, &newest)?;
    }
    let reads = pages_read(engine) - reads;
    oldest.commit()?;
    fresh.commit()?;
    let (old_us, new_us) = (
        old_secs * 1e6 / LOOKUPS as f64,
        new_secs * 1e6 / LOOKUPS as f64,
    );
    let ratio = old_us / new_us;
    report.figure(
        "history: versions of one row",
        plan.versions as f64,
        "versions",
    );
    report.figure("history: time to write them", build_secs, "s");
    report.figure("history: log written", log as f64 / MIB, "MiB");
    report.figure(
        "history: length with the oldest snapshot open",
        history as f64,
        "versions",
    );
    report.figure("lookup at the oldest snapshot", old_us, "us");
    report.figure("lookup at a new snapshot", new_us, "us");
    report.figure("lookups: pages read", reads as f64, "pages");
    report.figure("lookup oldest / new", ratio, "x");
    report.goal(
        format!("a lookup at the oldest snapshot <= 3x one at a new snapshot ({ratio:.2}x)"),
        ratio <= 3.0,
    );
    Ok(())
}

/// Seconds taken by `LOOKUPS / LOOKUP_ROUNDS` lookups of row `id`, each checked to be `expected`.
fn timed_lookups(
    txn: &mut Transaction,
    index: IndexId,
    id: u64,
    expected: &[u8],
) -> anyhow::Result<f64> {
    let started = Instant::now();
    for _ in 0..LOOKUPS / LOOKUP_ROUNDS {
        let found = txn.get(index, &key(id))?;
        anyhow::ensure!(
            found.as_deref() == Some(expected),
            "row {id} read wrong at a snapshot"
        );
    }
    Ok(started.elapsed().as_secs_f64())
}

/// What the writers did in one window.
struct Window {
    commits_per_second: f64,
    log_bytes: u64,
    peak_history: u64,
    end_history: u64,
}

/// Lets the writers run for `length`, sampling the history length.
fn window(engine: &Arc<Engine>, writers: &Writers, length: Duration) -> Window {
    let activity = Activity::start(engine, writers);
    let mut peak_history = 0;
    while activity.started.elapsed() < length {
        std::thread::sleep(SAMPLE_EVERY);
        peak_history = peak_history.max(engine.stats().history_length);
    }
    let (commits_per_second, log_bytes) = activity.end(engine, writers);
    Window {
        commits_per_second,
        log_bytes,
        peak_history,
        end_history: engine.stats().history_length,
    }
}

/// The writers' windows: without a snapshot, with an idle one open, after it closed.
fn writer_windows(
    engine: &Arc<Engine>,
    index: IndexId,
    plan: &Plan,
) -> anyhow::Result<[Window; 3]> {
    let writers = Writers::start(engine, index, plan.rows);
    std::thread::sleep(WARM_UP);
    let without = window(engine, &writers, plan.snapshot_open);
    let mut reader = engine.begin(Isolation::RepeatableRead)?;
    reader.get(index, &key(0))?;
    let with = window(engine, &writers, plan.snapshot_open);
    reader.commit()?;
    let after = window(engine, &writers, plan.after_close);
    writers.stop()?;
    Ok([without, with, after])
}

fn throughput_figures(
    engine: &Arc<Engine>,
    index: IndexId,
    plan: &Plan,
    report: &mut Report,
) -> anyhow::Result<()> {
    let [without, with, after] = writer_windows(engine, index, plan)?;
    let ratio = with.commits_per_second / without.commits_per_second;
    let left = after.end_history as f64 / with.peak_history.max(1) as f64;
    report.figure(
        "writers: window length",
        plan.snapshot_open.as_secs_f64(),
        "s",
    );
    for (name, window) in [("no snapshot", &without), ("snapshot open", &with)] {
        report.figure(
            &format!("writers, {name}: commits/s"),
            window.commits_per_second.round(),
            "commits/s",
        );
        report.figure(
            &format!("writers, {name}: log written"),
            window.log_bytes as f64 / MIB,
            "MiB",
        );
    }
    report.figure("writers, snapshot open / none", ratio, "x");
    report.figure(
        "history length, end of the window without a snapshot",
        without.end_history as f64,
        "versions",
    );
    report.figure(
        "history length, peak with the snapshot open",
        with.peak_history as f64,
        "versions",
    );
    report.figure(
        "history length after the snapshot closed",
        after.end_history as f64,
        "versions",
    );
    report.figure(
        "time after the snapshot closed",
        plan.after_close.as_secs_f64(),
        "s",
    );
    report.goal(
        format!("writer commits/s with the snapshot open >= 0.9x without ({ratio:.2}x)"),
        ratio >= 0.9,
    );
    report.goal(
        format!(
            "history length after the snapshot closed <= 1% of its peak ({:.2}%)",
            left * 100.0
        ),
        left <= 0.01,
    );
    Ok(())
}
