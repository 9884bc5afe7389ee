//! `steady check DIR`: offline verification, with progress on stderr and one line per problem.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
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
    if show_progress {
        eprintln!();
    }
    for problem in &report.problems {
        println!("{problem}");
    }
    println!(
        "{} spaces, {} trees, {} pages checked: {} problem{}",
        report.spaces,
        report.trees,
        report.pages_checked,
        report.problems.len(),
        if report.problems.len() == 1 { "" } else { "s" }
    );
    Ok(if report.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
