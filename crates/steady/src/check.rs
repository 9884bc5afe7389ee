//! `steady check DIR`: offline verification, with progress on stderr and one line per problem.
//!
//! First every page checksum and B+tree invariant, from the files alone. If those hold, the
//! database is opened (which recovers it after a crash, as `steady serve` would) and every
//! secondary index is verified against its table ([`Engine::check_indexes`]): a row without its
//! entry is a problem; stale entries (left for purge) are counted.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use steady_engine::engine::{Engine, EngineConfig};
use steady_engine::index_check::IndexCheck;
use steady_storage::check::{check_directory, CheckProgress};
use steady_storage::io::OsVfs;

pub fn run(dir: &Path) -> anyhow::Result<ExitCode> {
    if !dir.is_dir() {
        anyhow::bail!("{} is not a data directory", dir.display());
    }
    let vfs = OsVfs::new(dir, false).with_context(|| format!("opening {}", dir.display()))?;
    let show_progress = std::io::stderr().is_terminal();
    let mut progress = |p: CheckProgress| {
        if show_progress {
            eprint!("\rchecking pages: {}/{}", p.pages_done, p.pages_total);
            let _ = std::io::stderr().flush();
        }
    };
    let report = check_directory(&vfs, &mut progress)?;
    drop(vfs);
    if show_progress {
        eprintln!();
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

/// Opens the database (recovering it if it was not shut down cleanly) and verifies its indexes.
fn check_indexes(dir: &Path) -> anyhow::Result<Vec<IndexCheck>> {
    let config = EngineConfig {
        background_purge: false,
        ..EngineConfig::default()
    };
    let engine =
        Engine::open(dir, &config).with_context(|| format!("opening {}", dir.display()))?;
    let checks = engine.check_indexes().context("verifying the indexes")?;
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
