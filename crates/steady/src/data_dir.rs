//! The data directory `steady serve` and `steady shell` open: a SteadyDB one, or a new or empty
//! one, which becomes one (`steady check` and `steady backup` open only an existing database:
//! [`existing`]). A directory that holds other files and no system space is refused, so a
//! mistyped `--data` never turns, say, a home directory into a database. Before the first start it
//! may hold the configuration, the lock, and the files the configuration names (TLS certificate
//! and key).

use std::path::Path;

use anyhow::bail;
use steady_storage::io::LOCK_FILE;
use steady_storage::space::Space;
use steady_storage::store::SYSTEM_SPACE;

/// Files a directory may hold before its first start: the configuration, and the lock.
const BEFORE_FIRST_START: &[&str] = &["steady.toml", LOCK_FILE];

/// Refuses `dir` if it exists, is not a SteadyDB data directory, and holds files other than those
/// it may hold before its first start (`named`: the files its configuration names).
pub fn check(dir: &Path, named: &[&Path]) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if names.contains(&Space::file_name(SYSTEM_SPACE)) {
        return Ok(());
    }
    let foreign: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|name| !BEFORE_FIRST_START.contains(name))
        .filter(|name| !named.iter().any(|path| *path == dir.join(name)))
        .collect();
    if foreign.is_empty() {
        return Ok(());
    }
    bail!(
        "{} is not a SteadyDB data directory: it holds {} and no database; give a new or empty \
         directory",
        dir.display(),
        foreign
            .iter()
            .take(3)
            .map(|name| format!("\"{name}\""))
            .collect::<Vec<_>>()
            .join(", ")
            + if foreign.len() > 3 { ", ..." } else { "" }
    )
}

/// Refuses `dir` unless it holds a database: `steady check` and `steady backup` read one and must
/// never create one (an empty or mistyped directory would otherwise become a new, empty database
/// that checks clean).
pub fn existing(dir: &Path) -> anyhow::Result<()> {
    if !dir.is_dir() {
        bail!("{} is not a data directory", dir.display());
    }
    if !dir.join(Space::file_name(SYSTEM_SPACE)).exists() {
        bail!(
            "{} is not a SteadyDB data directory: it holds no {}",
            dir.display(),
            Space::file_name(SYSTEM_SPACE)
        );
    }
    Ok(())
}
