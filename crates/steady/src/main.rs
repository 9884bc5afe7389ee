//! `steady`: the SteadyDB command-line tool.
//!
//! Subcommands: `serve` (the PostgreSQL wire protocol server), `shell` (an embedded SQL session on a
//! data directory), `check` (offline verification of every page, tree and index), `bench` (the benchmark
//! scenarios).
//!
//! The binary allocates through mimalloc: a statement allocates many small, short-lived values
//! (rows, keys, results), and glibc's malloc spent up to two thirds of a full-scan aggregate's CPU in
//! `_int_malloc`, `malloc_consolidate` and `unlink_chunk` (perf, 1,000,000 rows).

mod backup;
mod bench;
mod check;
mod data_dir;
mod logging;
mod metrics;
mod progress;
mod serve;
mod shell;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Default data directory, relative to the working directory.
pub const DEFAULT_DATA_DIR: &str = "steady-data";

#[derive(Parser)]
#[command(
    name = "steady",
    version,
    about = "SteadyDB: a transactional database engine with steady performance"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a data directory (created if new) over the PostgreSQL protocol until SIGTERM/SIGINT.
    Serve {
        /// Data directory (its steady.toml, if any, configures the server).
        #[arg(long, default_value = DEFAULT_DATA_DIR)]
        data: PathBuf,
        /// Address to listen on [default: steady.toml's `listen`, else 127.0.0.1:5433].
        #[arg(long)]
        listen: Option<String>,
    },
    /// Open a data directory (created if new) and run SQL on it interactively or from stdin.
    Shell {
        /// Data directory.
        #[arg(default_value = DEFAULT_DATA_DIR)]
        dir: PathBuf,
        /// Page size for a new directory (4096 to 65536).
        #[arg(long, default_value_t = steady_storage::page::DEFAULT_PAGE_SIZE)]
        page_size: usize,
        /// Stop at the first failing statement and exit with status 3 (psql's ON_ERROR_STOP).
        #[arg(long)]
        stop_on_error: bool,
    },
    /// Verify every page checksum and B+tree invariant of a stopped database, then every index
    /// against its table.
    Check {
        /// Data directory.
        dir: PathBuf,
    },
    /// Copy a database, while it serves, into a new directory that opens consistent as of the
    /// end of the copy (an online physical backup); a stopped one is copied the same way.
    Backup {
        /// Data directory.
        dir: PathBuf,
        /// The backup's directory (new, or empty).
        dest: PathBuf,
        /// The serving server's address [default: DIR's steady.toml `listen`, else 127.0.0.1:5433].
        #[arg(long)]
        listen: Option<String>,
    },
    /// Run a benchmark scenario and print its figures.
    Bench {
        /// Scenario name (run `steady bench list` to see them).
        scenario: String,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        /// Scale factor for the data sizes (1.0 = the documented sizes).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve { .. }) {
        // `serve` sets its log up from its steady.toml; other commands log at `info` as text.
        if let Err(err) = logging::init(logging::LogFormat::Text, tracing::Level::INFO) {
            eprintln!("steady: {err:#}");
        }
    }
    let result = match cli.command {
        Command::Serve { data, listen } => serve::run(&serve::Options { data, listen }),
        Command::Shell {
            dir,
            page_size,
            stop_on_error,
        } => shell::run(
            &dir,
            &shell::Options {
                page_size,
                stop_on_error,
            },
        ),
        Command::Check { dir } => check::run(&dir),
        Command::Backup { dir, dest, listen } => backup::run(&dir, &dest, listen.as_deref()),
        Command::Bench {
            scenario,
            json,
            scale,
        } => run_bench(&scenario, json, scale),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("steady: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run_bench(scenario: &str, json: bool, scale: f64) -> anyhow::Result<ExitCode> {
    if scenario == "list" {
        for (name, what) in bench::SCENARIOS {
            println!("{name:<20} {what}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let report = bench::run(scenario, scale)?;
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", report.table());
    }
    Ok(ExitCode::SUCCESS)
}
