//! `steady check DIR`: offline verification, with progress bars on stderr ([`progress`]) and one
//! line per problem.
//!
//! First the directory's store is opened and closed, which replays the redo log after a crash as
//! `steady serve` would (the files of a directory that was not shut down cleanly are consistent only with its
//! redo log; checked alone they would show every page written after the last checkpoint as a
//! problem). Then every page checksum and B+tree invariant is checked from the files alone. If
//! those hold, every secondary index is verified against its table
//! ([`Engine::check_indexes`]): a row without its entry is a problem; stale entries (left for
//! purge) are counted.

use std::cell::OnceCell;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::Context;
use steady_engine::engine::{Engine, EngineConfig};
use steady_engine::index_check::IndexCheck;
use steady_storage::check::{check_directory, CheckProgress};
use steady_storage::io::OsVfs;
use steady_storage::store::{RecoveryProgress, RecoveryWatch, Store, StoreConfig};

use crate::progress;

pub fn run(dir: &Path) -> anyhow::Result<ExitCode> {
    crate::data_dir::existing(dir)?;
    match recover(dir) {
        Ok(0) => {}
        Ok(replayed) => {
            println!("recovered: {replayed} redo records replayed after the last checkpoint")
        }
        // The pages it could not recover are named by the check below.
        Err(err) => println!("recovery failed: {err:#}"),
    }
    let vfs = OsVfs::new(dir, false).with_context(|| format!("opening {}", dir.display()))?;
    let pages = OnceCell::new();
    let mut progress = |p: CheckProgress| {
        let bar = pages.get_or_init(|| progress::bar(p.pages_total, "checking", "pages"));
        bar.set_position(p.pages_done);
    };
    let report = check_directory(&vfs, &mut progress)?;
    drop(vfs);
    if let Some(bar) = pages.get() {
        bar.finish_and_clear();
    }
    let mut problems = report.problems.len();
    for problem in &report.problems {
        println!("{problem}");
    }
    let indexes = if problems == 0 {
        check_indexes(dir)?
    } else {
        Vec::new()
    };
    for index in &indexes {
        println!("{}", index_line(index));
        problems += usize::from(index.missing_count > 0);
    }
    println!(
        "{} spaces, {} trees, {} pages, {} indexes checked: {problems} problem{}",
        report.spaces,
        report.trees,
        report.pages_checked,
        indexes.len(),
        if problems == 1 { "" } else { "s" }
    );
    Ok(if problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Opens the directory's store, which replays its redo log if it was not shut down cleanly,
/// and closes it (a checkpoint): the redo records replayed. Only pages are recovered here; the
/// rollback of transactions the crash cut short waits for the engine's open, as in `serve`.
fn recover(dir: &Path) -> anyhow::Result<u64> {
    let replayed = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&replayed);
    let bar = progress::recovery_bar();
    let config = StoreConfig {
        recovery_watch: RecoveryWatch::new(move |p: RecoveryProgress| {
            counted.store(p.records_done, Ordering::Relaxed);
            bar(p);
        }),
        ..StoreConfig::default()
    };
    let store = Store::open_dir(dir, &config).context("recovering from the redo log")?;
    store.close().context("closing after recovery")?;
    Ok(replayed.load(Ordering::Relaxed))
}

fn engine_config() -> EngineConfig {
    EngineConfig {
        background_purge: false,
        ..EngineConfig::default()
    }
}

/// Opens the database (recovered already) and verifies its indexes.
fn check_indexes(dir: &Path) -> anyhow::Result<Vec<IndexCheck>> {
    let engine = Engine::open(dir, &engine_config())
        .with_context(|| format!("opening {}", dir.display()))?;
    let spinner = progress::spinner("verifying the indexes against their tables");
    let checks = engine.check_indexes().context("verifying the indexes")?;
    spinner.finish_and_clear();
    engine.close().context("closing the database")?;
    Ok(checks)
}

fn index_line(check: &IndexCheck) -> String {
    let name = format!("index {} of table {}", check.index, check.table);
    let counts = format!("{} entries, {} stale", check.entries, check.stale);
    if check.missing_count == 0 {
        return format!("{name}: {counts}");
    }
    let first: Vec<String> = check
        .missing
        .iter()
        .map(|pk| format!("{pk:02x?}"))
        .collect();
    format!(
        "{name}: {counts}; {} rows have no entry (keys {})",
        check.missing_count,
        first.join(", ")
    )
}
