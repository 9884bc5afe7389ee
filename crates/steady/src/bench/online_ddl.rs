//! `online-ddl`: schema changes on a big table must not stall the transactions running on it
//! (issue 15, seed 001).
//!
//! The table is sysbench's `sbtest1` (`id` key, `k` with an index, `c` CHAR(120), `pad`
//! CHAR(60)), [`ROWS`] rows at scale 1 — about 1 GiB, as the issue asks — in a buffer pool of
//! the table's size, with durable commits and the default configuration otherwise. [`THREADS`]
//! sessions in this process run sysbench's oltp_read_write transaction over and over (ten point
//! selects, four range queries of 100 rows, an update of `k`, an update of `c`, a delete and an
//! insert of one row, with uniformly random keys), each statement prepared once. A transaction
//! that fails with a serialization failure, a deadlock or a duplicate key is rolled back and
//! counted as retried (sysbench ignores the same errors); any other error ends the benchmark.
//!
//! After a warm-up and a baseline of [`BASELINE`] seconds, another session runs the DDL of the
//! wire benchmark (`scripts/online_ddl.sh`, which runs the same statements beside PostgreSQL 15
//! under sysbench itself) one after the other: CREATE INDEX on `c`, ADD COLUMN with a default,
//! ALTER COLUMN TYPE of that column, VACUUM FULL. Reported: each statement's time, the median
//! transactions per second of the baseline's seconds, each second's while the statements ran,
//! the lowest and the seconds below half the median. Goal: no second below 0.5x the baseline
//! median, and no transaction failed beyond the retried ones.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use rand::{rngs::StdRng, Rng, SeedableRng};
use steady_engine::engine::{Engine, EngineConfig};
use steady_sql::{Database, Prepared, QueryResult, Session, SqlError};
use steady_storage::store::StoreConfig;
use steady_types::Value;

use super::Report;

/// Rows at scale 1: about 1 GiB of table, as sysbench makes them.
const ROWS: f64 = 4_700_000.0;
/// Rows inserted per loading statement.
const LOAD_BATCH: u64 = 100_000;
/// Buffer pool bytes per row: the table and its index fit, as in the wire benchmark.
const POOL_BYTES_PER_ROW: usize = 230;
const THREADS: usize = 8;
const WARM_UP: Duration = Duration::from_secs(5);
const BASELINE: Duration = Duration::from_secs(20);
const TAIL: Duration = Duration::from_secs(5);
/// Rows each range query reads.
const RANGE: i64 = 100;
/// SQLSTATEs a sysbench client retries: serialization failure, deadlock, duplicate key.
const RETRIED: [&str; 3] = ["40001", "40P01", "23505"];
const STATEMENTS: [&str; 4] = [
    "CREATE INDEX sbtest1_c ON sbtest1 (c)",
    "ALTER TABLE sbtest1 ADD COLUMN extra integer DEFAULT 7",
    "ALTER TABLE sbtest1 ALTER COLUMN extra TYPE bigint",
    "VACUUM FULL sbtest1",
];

pub fn run(scale: f64) -> anyhow::Result<Report> {
    let rows = ((ROWS * scale) as i64).max(10_000);
    let dir = tempfile::tempdir()?;
    let config = EngineConfig {
        store: StoreConfig {
            buffer_pool_bytes: (rows as usize * POOL_BYTES_PER_ROW).max(64 << 20),
            ..StoreConfig::default()
        },
        ..EngineConfig::default()
    };
    let engine = Engine::open(dir.path(), &config)?;
    let db = Database::new(Arc::clone(&engine), "bench");
    load(&db, rows)?;

    let load = Load::start(&db, rows);
    std::thread::sleep(WARM_UP);
    let mut seconds = Seconds::new(&load);
    seconds.run_for(BASELINE.mul_f64(scale.clamp(0.25, 1.0)));
    let baseline = seconds.take();
    let timed = run_statements(&db, &mut seconds)?;
    seconds.run_for(TAIL);
    let during = seconds.take();
    let retried = load.stop()?;
    engine.close()?;
    Ok(report(rows, &timed, &baseline, &during, retried))
}

fn sql(session: &mut Session, text: &str) -> anyhow::Result<QueryResult> {
    let mut results = session.execute(text);
    anyhow::ensure!(results.len() == 1, "one statement: {text}");
    results
        .pop()
        .expect("one result")
        .with_context(|| text.to_string())
}

/// sysbench's table and rows (its `c` and `pad` are random digits; here hex digits of md5).
fn load(db: &Arc<Database>, rows: i64) -> anyhow::Result<()> {
    let mut session = db.session("bench");
    sql(
        &mut session,
        "CREATE TABLE sbtest1 (id integer PRIMARY KEY, k integer NOT NULL DEFAULT 0, \
         c char(120) NOT NULL DEFAULT '', pad char(60) NOT NULL DEFAULT '')",
    )?;
    let started = Instant::now();
    for first in (1..=rows).step_by(LOAD_BATCH as usize) {
        let last = (first + LOAD_BATCH as i64 - 1).min(rows);
        sql(
            &mut session,
            &format!(
                "INSERT INTO sbtest1 SELECT g, (random() * {rows})::integer, \
                 substr(repeat(md5(g::text), 4), 1, 120), substr(repeat(md5((-g)::text), 2), 1, 60) \
                 FROM generate_series({first}, {last}) g"
            ),
        )?;
        eprint!(
            "\rsteady bench online-ddl: loaded {last} of {rows} rows ({:.0} s)",
            started.elapsed().as_secs_f64()
        );
    }
    eprintln!();
    sql(&mut session, "CREATE INDEX k_1 ON sbtest1 (k)")?;
    Ok(())
}

/// sysbench oltp_read_write's statements, prepared in one session.
struct Statements {
    point: Prepared,
    ranges: [Prepared; 4],
    update_index: Prepared,
    update_non_index: Prepared,
    delete: Prepared,
    insert: Prepared,
}

impl Statements {
    fn prepare(session: &mut Session) -> anyhow::Result<Self> {
        let mut prepare = |text: &str| session.prepare(text, &[]).context(text.to_string());
        let range = "FROM sbtest1 WHERE id BETWEEN $1 AND $2";
        Ok(Statements {
            point: prepare("SELECT c FROM sbtest1 WHERE id = $1")?,
            ranges: [
                prepare(&format!("SELECT c {range}"))?,
                prepare(&format!("SELECT sum(k) {range}"))?,
                prepare(&format!("SELECT c {range} ORDER BY c"))?,
                prepare(&format!("SELECT DISTINCT c {range} ORDER BY c"))?,
            ],
            update_index: prepare("UPDATE sbtest1 SET k = k + 1 WHERE id = $1")?,
            update_non_index: prepare("UPDATE sbtest1 SET c = $2 WHERE id = $1")?,
            delete: prepare("DELETE FROM sbtest1 WHERE id = $1")?,
            insert: prepare("INSERT INTO sbtest1 (id, k, c, pad) VALUES ($1, $2, $3, $4)")?,
        })
    }

    /// One transaction's statements, BEGIN and COMMIT included.
    fn transaction(
        &self,
        session: &mut Session,
        rng: &mut StdRng,
        rows: i64,
    ) -> Result<(), Failed> {
        let id = |rng: &mut StdRng| Value::Integer(rng.gen_range(1..=rows as i32));
        sql_step(session.execute("BEGIN").pop())?;
        for _ in 0..10 {
            step(session.execute_prepared(&self.point, &[id(rng)]))?;
        }
        for range in &self.ranges {
            let start = rng.gen_range(1..=rows as i32);
            let bounds = [
                Value::Integer(start),
                Value::Integer(start + RANGE as i32 - 1),
            ];
            step(session.execute_prepared(range, &bounds))?;
        }
        step(session.execute_prepared(&self.update_index, &[id(rng)]))?;
        let c = Value::Text(format!("{:0120}", rng.gen::<u64>()));
        step(session.execute_prepared(&self.update_non_index, &[id(rng), c]))?;
        let gone = id(rng);
        step(session.execute_prepared(&self.delete, std::slice::from_ref(&gone)))?;
        let row = [
            gone,
            id(rng),
            Value::Text(format!("{:0120}", rng.gen::<u64>())),
            Value::Text(format!("{:060}", rng.gen::<u64>())),
        ];
        step(session.execute_prepared(&self.insert, &row))?;
        sql_step(session.execute("COMMIT").pop())
    }
}

/// Why a transaction did not commit.
enum Failed {
    /// An error sysbench retries ([`RETRIED`]).
    Retried,
    Other(String),
}

fn step(result: Result<QueryResult, SqlError>) -> Result<(), Failed> {
    match result {
        Ok(_) => Ok(()),
        Err(err) if RETRIED.contains(&err.code) => Err(Failed::Retried),
        Err(err) => Err(Failed::Other(format!("{} {}", err.code, err.message))),
    }
}

fn sql_step(result: Option<Result<QueryResult, SqlError>>) -> Result<(), Failed> {
    step(result.unwrap_or_else(|| Err(SqlError::syntax("no result"))))
}

/// The transactions running: [`THREADS`] sessions counting their commits.
struct Load {
    committed: Arc<AtomicU64>,
    retried: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<Result<(), String>>>,
}

impl Load {
    fn start(db: &Arc<Database>, rows: i64) -> Load {
        let committed = Arc::new(AtomicU64::new(0));
        let retried = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..THREADS)
            .map(|thread| {
                let (db, committed, retried, stop) =
                    (db.clone(), committed.clone(), retried.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut session = db.session("bench");
                    let statements =
                        Statements::prepare(&mut session).map_err(|e| e.to_string())?;
                    let mut rng = StdRng::seed_from_u64(thread as u64);
                    while !stop.load(Ordering::Relaxed) {
                        match statements.transaction(&mut session, &mut rng, rows) {
                            Ok(()) => drop(committed.fetch_add(1, Ordering::Relaxed)),
                            Err(failed) => {
                                session.execute("ROLLBACK");
                                if let Failed::Other(error) = failed {
                                    stop.store(true, Ordering::Relaxed);
                                    return Err(error);
                                }
                                retried.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        Load {
            committed,
            retried,
            stop,
            threads,
        }
    }

    /// Stops the sessions; the number of retried transactions, or the first other failure.
    fn stop(self) -> anyhow::Result<u64> {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads {
            let outcome = thread
                .join()
                .map_err(|_| anyhow::anyhow!("a session panicked"))?;
            outcome.map_err(|error| anyhow::anyhow!("a transaction failed: {error}"))?;
        }
        Ok(self.retried.load(Ordering::Relaxed))
    }
}

/// Transactions committed in each second, sampled on one-second ticks.
struct Seconds<'a> {
    load: &'a Load,
    next_tick: Instant,
    last_count: u64,
    samples: Vec<f64>,
}

impl<'a> Seconds<'a> {
    fn new(load: &'a Load) -> Self {
        Seconds {
            load,
            next_tick: Instant::now() + Duration::from_secs(1),
            last_count: load.committed.load(Ordering::Relaxed),
            samples: Vec::new(),
        }
    }

    /// Samples every tick that has passed.
    fn sample(&mut self) {
        while Instant::now() >= self.next_tick {
            let count = self.load.committed.load(Ordering::Relaxed);
            self.samples.push((count - self.last_count) as f64);
            self.last_count = count;
            self.next_tick += Duration::from_secs(1);
        }
    }

    /// Samples the ticks of the next `span`.
    fn run_for(&mut self, span: Duration) {
        let end = Instant::now() + span;
        while Instant::now() < end {
            std::thread::sleep(self.next_tick.saturating_duration_since(Instant::now()));
            self.sample();
        }
    }

    fn take(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.samples)
    }
}

/// Runs the DDL statements one after the other in a session of its own, sampling the seconds
/// from a second thread meanwhile; returns each statement's time.
fn run_statements(db: &Arc<Database>, seconds: &mut Seconds) -> anyhow::Result<Vec<f64>> {
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let ddl = scope.spawn(|| {
            let mut session = db.session("bench");
            let timed = STATEMENTS
                .iter()
                .map(|statement| {
                    eprintln!("steady bench online-ddl: {statement}");
                    let started = Instant::now();
                    sql(&mut session, statement).map(|_| started.elapsed().as_secs_f64())
                })
                .collect::<anyhow::Result<Vec<f64>>>();
            done.store(true, Ordering::Release);
            timed
        });
        while !done.load(Ordering::Acquire) {
            seconds.run_for(Duration::from_millis(100));
        }
        ddl.join()
            .map_err(|_| anyhow::anyhow!("the DDL session panicked"))?
    })
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

fn report(rows: i64, timed: &[f64], baseline: &[f64], during: &[f64], retried: u64) -> Report {
    let mut report = Report::new("online-ddl");
    report.figure("rows", rows as f64, "rows");
    for (statement, seconds) in STATEMENTS.iter().zip(timed) {
        report.figure(statement, *seconds, "s");
    }
    let base = median(baseline);
    report.figure("baseline median", base, "transactions/s");
    let lowest = during.iter().copied().fold(f64::INFINITY, f64::min);
    let below = during.iter().filter(|&&tps| tps < 0.5 * base).count();
    report.figure("lowest second during DDL", lowest, "transactions/s");
    report.figure("lowest / baseline median", lowest / base, "x");
    report.figure("seconds below 0.5x", below as f64, "s");
    report.figure("retried transactions", retried as f64, "transactions");
    let per_second: Vec<String> = during
        .iter()
        .map(|tps| format!("{:.2}", tps / base))
        .collect();
    eprintln!(
        "steady bench online-ddl: each second during DDL / baseline median: {}",
        per_second.join(" ")
    );
    report.goal(
        "no second during the DDL below 0.5x the baseline median, no failed transaction".into(),
        below == 0 && base > 0.0,
    );
    report
}
