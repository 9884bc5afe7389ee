//! `bloat`: a table updated over and over must not grow (seed 002).
//!
//! PostgreSQL writes each new row version into the table itself, so a table whose every row is
//! updated a few times is several times its size until VACUUM runs, and VACUUM rarely gives the
//! space back. Here the clustered index holds only the newest version of each row, in place, and old
//! versions go to the history store, which purge empties.
//!
//! A table of 100,000 rows (100 bytes: a u64 `k` and padding, 8-byte big-endian keys) is loaded,
//! then every row is updated in each of [`ROUNDS`] rounds, [`BATCH`] rows per READ COMMITTED
//! transaction, with background purge running (default configuration, a fresh directory, durable
//! commits). Reported: the size of the table's file (the space holding its clustered index) before
//! and after, their ratio (goal: at most 1.3x), the system space's file (history and undo) before
//! and after, the time, pages read and redo log bytes of the rounds, and the history length once
//! purge has caught up. `--scale s` runs s² of the rows (at least 1,000), so that the small scales
//! stay quick.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use steady_engine::engine::{Engine, EngineConfig, Isolation};
use steady_engine::version::IndexId;
use steady_storage::store::SYSTEM_SPACE;

use super::long_reader::{key, load, log_bytes, pages_read, row, wait_for_purge, MIB};
use super::{Phases, Report};

/// Times every row is updated.
const ROUNDS: u64 = 20;
/// Rows updated per transaction.
const BATCH: u64 = 1_000;

pub fn run(scale: f64, phases: &Phases) -> anyhow::Result<Report> {
    let rows = ((100_000.0 * scale * scale) as u64).max(1_000);
    let dir = tempfile::tempdir()?;
    let engine = Engine::open(dir.path(), &EngineConfig::default())?;
    let index = engine.create_index()?;
    phases.now(&format!("loading {rows} rows"));
    load(&engine, index, rows)?;
    wait_for_purge(&engine)?;
    phases.now(&format!("updating every row {ROUNDS} times"));
    let rounds = update_rounds(&engine, index, rows)?;
    engine.close()?;
    Ok(rounds.report(rows))
}

/// What the rounds of updates did.
struct Rounds {
    secs: f64,
    log: u64,
    pages_read: u64,
    table: (u64, u64),
    system: (u64, u64),
    history_when_done: u64,
    history_after_purge: u64,
}

/// Updates every row `ROUNDS` times; file sizes before, and after purge caught up.
fn update_rounds(engine: &Arc<Engine>, index: IndexId, rows: u64) -> anyhow::Result<Rounds> {
    let (table, system) = (table_bytes(engine, index)?, system_bytes(engine)?);
    let (log, reads) = (log_bytes(engine), pages_read(engine));
    let started = Instant::now();
    for round in 1..=ROUNDS {
        update_every_row(engine, index, rows, round)?;
    }
    let secs = started.elapsed().as_secs_f64();
    let (log, pages_read) = (log_bytes(engine) - log, pages_read(engine) - reads);
    let history_when_done = engine.stats().history_length;
    wait_for_purge(engine)?;
    Ok(Rounds {
        secs,
        log,
        pages_read,
        table: (table, table_bytes(engine, index)?),
        system: (system, system_bytes(engine)?),
        history_when_done,
        history_after_purge: engine.stats().history_length,
    })
}

impl Rounds {
    fn report(&self, rows: u64) -> Report {
        let ratio = self.table.1 as f64 / self.table.0 as f64;
        let mut report = Report::new("bloat");
        report.figure("rows", rows as f64, "rows");
        report.figure("rounds of updating every row", ROUNDS as f64, "rounds");
        report.figure("update time", self.secs, "s");
        report.figure(
            "row updates/s",
            (rows * ROUNDS) as f64 / self.secs,
            "updates/s",
        );
        report.figure("updates: pages read", self.pages_read as f64, "pages");
        report.figure("updates: log written", self.log as f64 / MIB, "MiB");
        report.figure("table file before", self.table.0 as f64 / MIB, "MiB");
        report.figure("table file after", self.table.1 as f64 / MIB, "MiB");
        report.figure("table file after / before", ratio, "x");
        report.figure("system file before", self.system.0 as f64 / MIB, "MiB");
        report.figure("system file after", self.system.1 as f64 / MIB, "MiB");
        report.figure(
            "history length when the updates ended",
            self.history_when_done as f64,
            "versions",
        );
        report.figure(
            "history length after purge caught up",
            self.history_after_purge as f64,
            "versions",
        );
        report.goal(
            format!("table file after <= 1.3x before ({ratio:.2}x)"),
            ratio <= 1.3,
        );
        report
    }
}

/// Sets k = `round` in every row, `BATCH` rows per transaction.
fn update_every_row(
    engine: &Arc<Engine>,
    index: IndexId,
    rows: u64,
    round: u64,
) -> anyhow::Result<()> {
    for start in (0..rows).step_by(BATCH as usize) {
        let mut txn = engine.begin(Isolation::ReadCommitted)?;
        for id in start..(start + BATCH).min(rows) {
            txn.begin_statement();
            anyhow::ensure!(
                txn.update(index, &key(id), &row(round))?,
                "row {id} is missing"
            );
        }
        txn.commit()?;
    }
    Ok(())
}

/// Bytes of the file of the space that holds `index`.
fn table_bytes(engine: &Arc<Engine>, index: IndexId) -> anyhow::Result<u64> {
    let space = engine
        .store()
        .spaces()
        .into_iter()
        .find(|space| space.trees().iter().any(|tree| tree.index_id == index))
        .with_context(|| format!("no space holds index {index}"))?;
    Ok(u64::from(space.size_in_pages()) * space.page_size() as u64)
}

/// Bytes of the system space's file (history and undo trees).
fn system_bytes(engine: &Arc<Engine>) -> anyhow::Result<u64> {
    let space = engine
        .store()
        .space(SYSTEM_SPACE)
        .context("no system space")?;
    Ok(u64::from(space.size_in_pages()) * space.page_size() as u64)
}
