//! `steady bench SCENARIO`: benchmarks that print a table and, with `--json`, one JSON object.
//!
//! Each scenario measures ratios within one run (the machines are noisy) and reports the figures it
//! is judged by next to the goal, so a reader sees at once whether the goal holds.

mod bloat;
mod bulk_build;
mod drop_space;
mod drop_stall;
mod fragmented_scan;
mod group_commit;
mod long_reader;
mod scan_resistance;

use std::fmt::Write as _;

use indicatif::ProgressBar;
use serde::Serialize;

use crate::progress;

/// The scenarios, by name.
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "scan-resistance",
        "hot-set hit rate while a scan of a tree 10x the pool runs",
    ),
    (
        "drop-space",
        "time to invalidate a space with 100,000 pages in the pool",
    ),
    (
        "bulk-build",
        "bottom-up B+tree build vs one-at-a-time inserts: time and redo log bytes",
    ),
    (
        "group-commit",
        "durable commits/s with 8 threads vs 1: one fsync serves many commits",
    ),
    (
        "long-reader",
        "a long REPEATABLE READ reader beside hot-row writers: scan time, one-seek history, TPS, purge",
    ),
    (
        "bloat",
        "20 rounds of updating every row with purge running: table file size after vs before",
    ),
    (
        "fragmented-scan",
        "cold scans of a table loaded in random key order vs fio's sequential MB/s on its file",
    ),
    (
        "drop-stall",
        "point-query latency on a small table while a big cached table is dropped",
    ),
];

/// One measured figure.
#[derive(Debug, Serialize)]
pub struct Figure {
    pub name: String,
    pub value: f64,
    pub unit: String,
}

/// What a scenario reports.
#[derive(Debug, Serialize)]
pub struct Report {
    pub scenario: String,
    pub figures: Vec<Figure>,
    /// Goals as text with whether they held.
    pub goals: Vec<Goal>,
}

#[derive(Debug, Serialize)]
pub struct Goal {
    pub description: String,
    pub met: bool,
}

impl Report {
    pub fn new(scenario: &str) -> Self {
        Report {
            scenario: scenario.to_string(),
            figures: Vec::new(),
            goals: Vec::new(),
        }
    }

    pub fn figure(&mut self, name: &str, value: f64, unit: &str) {
        self.figures.push(Figure {
            name: name.to_string(),
            value,
            unit: unit.to_string(),
        });
    }

    pub fn goal(&mut self, description: String, met: bool) {
        self.goals.push(Goal { description, met });
    }

    /// A readable table of the figures and goals.
    pub fn table(&self) -> String {
        let width = self.figures.iter().map(|f| f.name.len()).max().unwrap_or(0);
        let mut out = format!("steady bench {}\n", self.scenario);
        for f in &self.figures {
            let _ = writeln!(
                out,
                "  {:<width$}  {:>14}  {}",
                f.name,
                format_value(f.value),
                f.unit
            );
        }
        for g in &self.goals {
            let mark = if g.met { "met" } else { "NOT MET" };
            let _ = writeln!(out, "  goal: {} ... {mark}", g.description);
        }
        out
    }
}

fn format_value(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        format!("{value:.3}")
    }
}

/// What a running scenario is doing, on a spinner with the time spent ([`progress::spinner`]).
pub struct Phases {
    scenario: String,
    spinner: ProgressBar,
}

impl Phases {
    fn start(scenario: &str) -> Phases {
        Phases {
            scenario: scenario.to_owned(),
            spinner: progress::spinner(&format!("bench {scenario}")),
        }
    }

    /// Shows the phase the scenario enters.
    pub fn now(&self, phase: &str) {
        let message = format!("bench {}: {phase}", self.scenario);
        self.spinner.set_message(message);
    }
}

impl Drop for Phases {
    fn drop(&mut self) {
        self.spinner.finish_and_clear();
    }
}

/// Runs a scenario by name.
pub fn run(scenario: &str, scale: f64) -> anyhow::Result<Report> {
    let phases = &Phases::start(scenario);
    match scenario {
        "scan-resistance" => scan_resistance::run(scale, phases),
        "drop-space" => drop_space::run(scale, phases),
        "drop-stall" => drop_stall::run(scale, phases),
        "fragmented-scan" => fragmented_scan::run(scale, phases),
        "group-commit" => group_commit::run(scale, phases),
        "bulk-build" => bulk_build::run(scale, phases),
        "long-reader" => long_reader::run(scale, phases),
        "bloat" => bloat::run(scale, phases),
        other => {
            let names: Vec<&str> = SCENARIOS.iter().map(|(n, _)| *n).collect();
            anyhow::bail!(
                "unknown scenario {other:?}; scenarios: {}",
                names.join(", ")
            )
        }
    }
}
