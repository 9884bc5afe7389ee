//! `drop-stall`: DROP TABLE of a big, fully cached table must not stall queries on other tables
//! (seed 004).
//!
//! InnoDB used to scan the whole buffer pool under its mutex to evict a dropped table's pages, and
//! the unlink of a multi-GiB file stalls the disk for a second or more. Here DROP TABLE is O(1) in
//! the foreground (a space version bump and a durable rename) and the file is cut down in slices by
//! the store's background reclaimer; this scenario measures whether queries notice either part.
//!
//! A fresh directory with 4 KiB pages and a buffer pool of 1.25x the big table plus room for the
//! rest (default configuration otherwise: durable commits, background purge and flushing). The
//! table `big` (a BIGINT key and 300 bytes of text per row) is filled in transactions of
//! [`LOAD_BATCH`] rows until its space has 100,000 pages, then purge catches up, a checkpoint
//! writes every page, and one full scan reads it, so its pages sit clean in the pool. The table
//! `small` holds [`SMALL_ROWS`] rows. [`THREADS`] threads run point queries on `small`, each
//! pausing [`QUERY_PAUSE`] between queries: `get_row` of a random key, one READ COMMITTED
//! transaction per query, each timed.
//! After a warm-up, a baseline window of [`BASELINE`] runs without DDL; then `big` is dropped while
//! the queries go on, and the "during" window lasts until the reclaimer has removed the file, plus
//! [`TAIL`].
//!
//! Reported: the big table's pages in use and in the pool and its file size before the drop, the
//! DROP TABLE statement time, the reclaim time (with the reclaimer's slice and pause), and for both
//! windows queries/s, latency p50/p99/max and the queries over 5 ms; then when the worst query of
//! the drop ended and the worst one of the foreground statement and of the background reclaim
//! separately. A query's latency includes any time its thread waited for a CPU, so each window
//! also reports the share of time the query threads spent runnable but not running (from
//! `/proc/PID/task/TID/schedstat`, where the OS has it): with more query threads than cores it is
//! the bulk of the tail. Goal: the worst query latency during the drop is at most 5 ms. `--scale`
//! multiplies the big table's page count (at least 1,000 pages) and shortens the baseline below
//! scale 1.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use rand::{rngs::StdRng, Rng, SeedableRng};
use steady_engine::catalog::{ColumnDef, TableDef};
use steady_engine::engine::{Engine, EngineConfig, Isolation};
use steady_engine::table::primary_key;
use steady_storage::space::Space;
use steady_storage::store::StoreConfig;
use steady_types::{DataType, Value};

use super::{Phases, Report};

const PAGE_SIZE: usize = 4096;
/// Pages of the big table at scale 1.
const BIG_PAGES: f64 = 100_000.0;
/// Text bytes of each row of the big table.
const BIG_PAYLOAD: usize = 300;
/// Text bytes of each row of the small table.
const SMALL_PAYLOAD: usize = 100;
const SMALL_ROWS: i64 = 10_000;
/// Rows inserted per transaction while loading.
const LOAD_BATCH: i64 = 10_000;
/// Threads running point queries.
const THREADS: usize = 4;
/// Pause between two queries of one thread: an OLTP load that leaves the CPUs room, so that the
/// latency measured is the engine's and not the scheduler's (4 busy threads on 2 cores queue
/// behind each other for a scheduler tick, drop or no drop).
const QUERY_PAUSE: Duration = Duration::from_micros(250);
const WARM_UP: Duration = Duration::from_millis(300);
/// The baseline window at scale 1.
const BASELINE: Duration = Duration::from_secs(3);
/// How long the queries go on after the reclaimer has finished.
const TAIL: Duration = Duration::from_millis(300);
const RECLAIM_TIMEOUT: Duration = Duration::from_secs(300);
/// The goal for the worst query latency during the drop.
const GOAL_MS: f64 = 5.0;
const MIB: f64 = (1u64 << 20) as f64;

pub fn run(scale: f64, phases: &Phases) -> anyhow::Result<Report> {
    let pages = ((BIG_PAGES * scale) as usize).max(1_000);
    let baseline = BASELINE.mul_f64(scale.clamp(0.1, 1.0));
    let dir = tempfile::tempdir()?;
    let config = config(pages);
    let engine = Engine::open(dir.path(), &config)?;
    phases.now(&format!("loading a table of {pages} pages"));
    let small = create(&engine, "small")?;
    insert_rows(&engine, &small, 0..SMALL_ROWS, SMALL_PAYLOAD)?;
    let big = create(&engine, "big")?;
    let big_rows = fill(&engine, &big, pages)?;
    settle(&engine)?;
    let before = cache(&engine, &big, big_rows, dir.path())?;

    phases.now("point queries before, during and after DROP TABLE");
    let queries = Queries::start(&engine, &small);
    std::thread::sleep(WARM_UP);
    let baseline_start = queries.mark();
    std::thread::sleep(baseline);
    let dropped = drop_and_reclaim(&engine, &queries)?;
    let samples = queries.stop()?;
    engine.close()?;

    let mut report = Report::new("drop-stall");
    big_figures(&mut report, big_rows, &before);
    drop_figures(&mut report, &dropped, &config.store);
    let windows = Windows::split(&samples, baseline_start, &dropped);
    latency_figures(&mut report, &windows);
    Ok(report)
}

fn config(pages: usize) -> EngineConfig {
    let frames = pages + pages / 4 + 4_000;
    EngineConfig {
        store: StoreConfig {
            page_size: PAGE_SIZE,
            buffer_pool_bytes: frames * PAGE_SIZE,
            ..StoreConfig::default()
        },
        ..EngineConfig::default()
    }
}

/// A table `(id BIGINT PRIMARY KEY, pad TEXT)`.
fn create(engine: &Arc<Engine>, name: &str) -> anyhow::Result<Arc<TableDef>> {
    let column = |name: &str, data_type| ColumnDef {
        nullable: false,
        ..ColumnDef::plain(name, data_type)
    };
    let columns = vec![
        column("id", DataType::BigInt),
        column("pad", DataType::Text),
    ];
    Ok(engine.autocommit(|t| t.create_table(name, columns, vec![0]))?)
}

/// Inserts rows with the given ids in one transaction.
fn insert_rows(
    engine: &Arc<Engine>,
    table: &TableDef,
    ids: std::ops::Range<i64>,
    payload: usize,
) -> anyhow::Result<()> {
    let mut txn = engine.begin(Isolation::ReadCommitted)?;
    for id in ids {
        let pad = format!("{id:0>payload$}");
        txn.insert_row(table, &[Value::BigInt(id), Value::Text(pad)])?;
    }
    txn.commit()?;
    Ok(())
}

/// Inserts rows into `table`, `LOAD_BATCH` per transaction, until its space has `pages` pages in
/// use; returns the row count.
fn fill(engine: &Arc<Engine>, table: &TableDef, pages: usize) -> anyhow::Result<i64> {
    let space = table_space(engine, table)?;
    let mut rows = 0;
    while space.allocated_pages().len() < pages {
        insert_rows(engine, table, rows..rows + LOAD_BATCH, BIG_PAYLOAD)?;
        rows += LOAD_BATCH;
    }
    Ok(rows)
}

fn table_space(engine: &Arc<Engine>, table: &TableDef) -> anyhow::Result<Arc<Space>> {
    engine
        .store()
        .space(table.space)
        .with_context(|| format!("table {} has no space", table.name))
}

/// Lets purge catch up with the load, then writes every dirty page, so that the windows measure
/// queries and the drop rather than load leftovers.
fn settle(engine: &Arc<Engine>) -> anyhow::Result<()> {
    while engine.stats().purge_lag > 0 {
        std::thread::sleep(Duration::from_millis(10));
    }
    engine.purge()?;
    engine.store().checkpoint()?;
    Ok(())
}

/// The big table as the drop finds it.
struct BigTable {
    pages_in_use: usize,
    cached: usize,
    file_bytes: u64,
}

/// Reads every row of `table` once, so that its pages are in the pool, and measures it.
fn cache(
    engine: &Arc<Engine>,
    table: &TableDef,
    rows: i64,
    dir: &Path,
) -> anyhow::Result<BigTable> {
    let mut txn = engine.begin(Isolation::ReadCommitted)?;
    let mut seen = 0;
    for row in txn.scan_rows(table, Bound::Unbounded, Bound::Unbounded)? {
        row?;
        seen += 1;
    }
    txn.commit()?;
    anyhow::ensure!(seen == rows, "scanned {seen} rows of {rows}");
    let space = table_space(engine, table)?;
    let pool = engine.store().pool();
    let in_use = space.allocated_pages();
    Ok(BigTable {
        pages_in_use: in_use.len(),
        cached: in_use
            .iter()
            .filter(|&&(page, _)| pool.contains(&space, page))
            .count(),
        file_bytes: std::fs::metadata(dir.join(Space::file_name(space.id())))?.len(),
    })
}

/// One timed query: when it ended and how long it took, in nanoseconds since the queries started.
#[derive(Clone, Copy)]
struct Sample {
    end: u64,
    latency: u64,
}

/// A point in time on the queries' clock (ns), with how long the query threads had waited for a
/// CPU by then (ns; `None` where the OS does not say).
#[derive(Clone, Copy)]
struct Mark {
    at: u64,
    cpu_wait: Option<u64>,
}

/// The query threads, each recording every query it runs.
struct Queries {
    origin: Instant,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<anyhow::Result<Vec<Sample>>>>,
    /// The scheduler statistics file of each thread (Linux).
    schedstats: Vec<PathBuf>,
}

impl Queries {
    fn start(engine: &Arc<Engine>, table: &Arc<TableDef>) -> Queries {
        let origin = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let keys: Arc<Vec<Vec<u8>>> = Arc::new(
            (0..SMALL_ROWS)
                .map(|id| primary_key(table, &[Value::BigInt(id)]))
                .collect(),
        );
        let (sender, receiver) = mpsc::channel();
        let threads = (0..THREADS as u64)
            .map(|seed| {
                let (engine, table) = (engine.clone(), table.clone());
                let (stop, keys, sender) = (stop.clone(), keys.clone(), sender.clone());
                std::thread::spawn(move || {
                    let _ = sender.send(schedstat_path());
                    query_loop(&engine, &table, &keys, &stop, origin, seed)
                })
            })
            .collect();
        let schedstats = receiver.iter().take(THREADS).flatten().collect();
        Queries {
            origin,
            stop,
            threads,
            schedstats,
        }
    }

    fn mark(&self) -> Mark {
        Mark {
            at: self.now(),
            cpu_wait: self.cpu_wait(),
        }
    }

    /// Nanoseconds since the queries started.
    fn now(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    /// Nanoseconds the query threads have spent runnable but waiting for a CPU, in total.
    fn cpu_wait(&self) -> Option<u64> {
        if self.schedstats.len() < THREADS {
            return None;
        }
        self.schedstats
            .iter()
            .map(|path| {
                let text = std::fs::read_to_string(path).ok()?;
                text.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .sum()
    }

    fn stop(self) -> anyhow::Result<Vec<Sample>> {
        self.stop.store(true, Ordering::Relaxed);
        let mut samples = Vec::new();
        for thread in self.threads {
            let done = thread
                .join()
                .map_err(|_| anyhow::anyhow!("a query thread panicked"))?;
            samples.extend(done?);
        }
        Ok(samples)
    }
}

/// The calling thread's scheduler statistics file (`/proc/PID/task/TID/schedstat`, whose second
/// field is the time spent waiting on a run queue).
fn schedstat_path() -> Option<PathBuf> {
    let task = std::fs::read_link("/proc/thread-self").ok()?;
    Some(Path::new("/proc").join(task).join("schedstat"))
}

fn query_loop(
    engine: &Arc<Engine>,
    table: &TableDef,
    keys: &[Vec<u8>],
    stop: &AtomicBool,
    origin: Instant,
    seed: u64,
) -> anyhow::Result<Vec<Sample>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut samples = Vec::with_capacity(1 << 20);
    while !stop.load(Ordering::Relaxed) {
        let key = &keys[rng.gen_range(0..keys.len())];
        let started = Instant::now();
        let mut txn = engine.begin(Isolation::ReadCommitted)?;
        let row = txn.get_row(table, key)?;
        txn.commit()?;
        let end = origin.elapsed();
        anyhow::ensure!(row.is_some(), "a row of the small table is missing");
        samples.push(Sample {
            end: end.as_nanos() as u64,
            latency: (end - (started - origin)).as_nanos() as u64,
        });
        std::thread::sleep(QUERY_PAUSE);
    }
    Ok(samples)
}

/// When the drop happened, on the queries' clock.
struct Dropped {
    start: Mark,
    statement_end: u64,
    reclaimed: u64,
    end: Mark,
}

/// Drops the big table while the queries run and waits for the reclaimer, then for `TAIL`.
fn drop_and_reclaim(engine: &Arc<Engine>, queries: &Queries) -> anyhow::Result<Dropped> {
    let start = queries.mark();
    engine.autocommit(|t| t.drop_table("big"))?;
    let statement_end = queries.now();
    anyhow::ensure!(
        engine.store().wait_reclaimed(RECLAIM_TIMEOUT),
        "the reclaimer did not finish within {RECLAIM_TIMEOUT:?}"
    );
    let reclaimed = queries.now();
    std::thread::sleep(TAIL);
    Ok(Dropped {
        start,
        statement_end,
        reclaimed,
        end: queries.mark(),
    })
}

/// The queries that ended in a window.
struct Window {
    /// Their latencies in ns, sorted.
    latencies: Vec<u64>,
    seconds: f64,
    /// When the worst one ended, in ms after the DROP statement started.
    worst_at_ms: f64,
    /// The share of the window the query threads spent waiting for a CPU.
    cpu_wait_share: Option<f64>,
}

impl Window {
    fn of(samples: &[Sample], from: Mark, to: Mark, drop_start: u64) -> Window {
        let inside: Vec<Sample> = samples
            .iter()
            .filter(|s| s.end >= from.at && s.end < to.at)
            .copied()
            .collect();
        let worst = inside.iter().max_by_key(|s| s.latency);
        let mut latencies: Vec<u64> = inside.iter().map(|s| s.latency).collect();
        latencies.sort_unstable();
        let span = to.at - from.at;
        Window {
            latencies,
            seconds: span as f64 / 1e9,
            worst_at_ms: worst.map_or(0.0, |s| (s.end as f64 - drop_start as f64) / 1e6),
            cpu_wait_share: cpu_wait_share(from, to),
        }
    }

    /// The latency at quantile `q`, in ms.
    fn quantile_ms(&self, q: f64) -> f64 {
        let last = self.latencies.len().saturating_sub(1);
        let index = ((last as f64) * q).round() as usize;
        self.latencies.get(index).map_or(0.0, |&ns| ns as f64 / 1e6)
    }

    fn max_ms(&self) -> f64 {
        self.quantile_ms(1.0)
    }

    fn over_goal(&self) -> usize {
        let goal_ns = (GOAL_MS * 1e6) as u64;
        self.latencies.len() - self.latencies.partition_point(|&ns| ns <= goal_ns)
    }

    fn queries_per_second(&self) -> f64 {
        (self.latencies.len() as f64 / self.seconds).round()
    }
}

/// The share of the time between two marks that the query threads spent waiting for a CPU.
fn cpu_wait_share(from: Mark, to: Mark) -> Option<f64> {
    let waited = to.cpu_wait?.checked_sub(from.cpu_wait?)?;
    Some(waited as f64 / (THREADS as u64 * (to.at - from.at)) as f64)
}

/// The windows the queries are split into: the baseline, and the whole drop with its two parts.
struct Windows {
    baseline: Window,
    during: Window,
    statement: Window,
    reclaim: Window,
}

impl Windows {
    fn split(samples: &[Sample], baseline_start: Mark, dropped: &Dropped) -> Windows {
        let drop_start = dropped.start.at;
        let window = |from, to| Window::of(samples, from, to, drop_start);
        let at = |at| Mark { at, cpu_wait: None };
        Windows {
            baseline: window(baseline_start, dropped.start),
            during: window(dropped.start, dropped.end),
            statement: window(dropped.start, at(dropped.statement_end)),
            reclaim: window(at(dropped.statement_end), at(dropped.reclaimed)),
        }
    }
}

fn big_figures(report: &mut Report, rows: i64, big: &BigTable) {
    report.figure("big table: rows", rows as f64, "rows");
    report.figure("big table: pages in use", big.pages_in_use as f64, "pages");
    report.figure(
        "big table: pages in the pool before the drop",
        big.cached as f64,
        "pages",
    );
    report.figure("big table: file size", big.file_bytes as f64 / MIB, "MiB");
}

fn drop_figures(report: &mut Report, dropped: &Dropped, store: &StoreConfig) {
    let ms = |ns: u64| ns as f64 / 1e6;
    report.figure(
        "DROP TABLE statement time",
        ms(dropped.statement_end - dropped.start.at),
        "ms",
    );
    report.figure(
        "reclaim time after the statement",
        ms(dropped.reclaimed - dropped.statement_end),
        "ms",
    );
    report.figure(
        "reclaimer slice",
        store.reclaim_slice_bytes as f64 / MIB,
        "MiB",
    );
    report.figure(
        "reclaimer pause between slices",
        store.reclaim_pause.as_secs_f64() * 1e3,
        "ms",
    );
}

fn window_figures(report: &mut Report, name: &str, window: &Window) {
    report.figure(&format!("{name}: window"), window.seconds, "s");
    report.figure(
        &format!("{name}: queries/s"),
        window.queries_per_second(),
        "queries/s",
    );
    report.figure(&format!("{name}: p50"), window.quantile_ms(0.5), "ms");
    report.figure(&format!("{name}: p99"), window.quantile_ms(0.99), "ms");
    report.figure(&format!("{name}: max"), window.max_ms(), "ms");
    report.figure(
        &format!("{name}: queries over {GOAL_MS} ms"),
        window.over_goal() as f64,
        "queries",
    );
    if let Some(share) = window.cpu_wait_share {
        report.figure(
            &format!("{name}: query threads waiting for a CPU"),
            share * 100.0,
            "% of time",
        );
    }
}

fn latency_figures(report: &mut Report, windows: &Windows) {
    window_figures(report, "baseline", &windows.baseline);
    window_figures(report, "during drop", &windows.during);
    report.figure(
        "during drop: worst query ended at",
        windows.during.worst_at_ms,
        "ms after DROP",
    );
    report.figure(
        "max while the statement ran",
        windows.statement.max_ms(),
        "ms",
    );
    report.figure(
        "max while the reclaimer ran",
        windows.reclaim.max_ms(),
        "ms",
    );
    let worst = windows.during.max_ms();
    report.goal(
        format!("worst query latency during the drop <= {GOAL_MS} ms ({worst:.3} ms)"),
        worst <= GOAL_MS,
    );
}
