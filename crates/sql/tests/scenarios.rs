//! Scenario files: goldenscript scripts (one commented scenario per file, commands and the output
//! expected under `---`) that read as specifications of isolation anomalies, EXPLAIN plans and
//! crash recovery. `UPDATE_GOLDENFILES=1 cargo nextest run -p steady-sql --test scenarios`
//! rewrites the expected output of every file; review the diff before committing it.
//!
//! - `scenarios/isolation/*`: sessions `t1:`, `t2:`, ... on one database, each on its own thread; a
//!   statement waiting for a row lock shows `(blocked)`, and its answer appears when another
//!   session releases it (see `scenarios/runner.rs`).
//! - `scenarios/explain/*`: schemas, ANALYZE, EXPLAIN and the queries themselves.
//! - `scenarios/recovery/*`: the database in a child process that `crash` kills and `restart`
//!   reopens (see `scenarios/process.rs`).
//!
//! `SCENARIO_FILE=name` runs only the files whose path contains `name`.

mod common;
#[path = "scenarios/process.rs"]
mod process;
#[path = "scenarios/runner.rs"]
mod runner;
#[path = "scenarios/sessions.rs"]
mod sessions;

use std::path::{Path, PathBuf};

use crate::process::ProcessRunner;
use crate::runner::SqlRunner;

/// The scenario files of one directory, sorted, filtered by `SCENARIO_FILE`.
fn scenario_files(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(kind);
    let only = std::env::var("SCENARIO_FILE").ok();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("a scenario directory")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .filter(|path| {
            only.as_deref()
                .is_none_or(|o| path.to_string_lossy().contains(o))
        })
        .collect();
    files.sort();
    files
}

/// Runs every file of `kind` with a fresh runner, and fails listing every file that failed.
fn run_scenarios<R: goldenscript::Runner>(kind: &str, minimum: usize, runner: impl Fn() -> R) {
    let files = scenario_files(kind);
    let mut failures = Vec::new();
    for file in &files {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            goldenscript::run(&mut runner(), file)
        }));
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(err)) => failures.push(format!("{}: {err}", file.display())),
            Err(_) => failures.push(format!("{}: output differs (see above)", file.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    if std::env::var("SCENARIO_FILE").is_err() {
        assert!(
            files.len() >= minimum,
            "{kind}: {} files, expected at least {minimum}",
            files.len()
        );
    }
}

#[test]
fn isolation() {
    run_scenarios("isolation", 18, SqlRunner::open);
}

#[test]
fn explain() {
    run_scenarios("explain", 10, SqlRunner::open);
}

#[test]
fn recovery() {
    run_scenarios("recovery", 8, ProcessRunner::new);
}

/// The database process of the recovery scenarios (see `scenarios/process.rs`).
#[test]
#[ignore = "run only as the child process of the recovery scenarios"]
fn scenario_child() {
    let dir = std::env::var(process::CHILD_DIR_ENV).expect("the child needs a directory");
    process::serve(Path::new(&dir));
}
