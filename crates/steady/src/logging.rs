//! The log: `tracing` events from every layer written to stderr, one line each with a UTC
//! timestamp and a level, as text or as JSON objects (`log_format` in steady.toml); `log_level`
//! sets the least severe level written (default `info`). Statements that take at least
//! `log_min_duration_statement` are logged by the session layer with their duration (PostgreSQL's
//! setting of that name; a session may SET it).

use anyhow::{anyhow, bail};
use tracing::Level;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// `2026-12-06T04:40:01.123456Z  INFO listening on ...`
    #[default]
    Text,
    /// `{"timestamp":"...","level":"INFO","message":"listening on ...", ...}`
    Json,
}

impl LogFormat {
    pub fn parse(name: &str) -> anyhow::Result<LogFormat> {
        match name {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => bail!("log_format must be \"text\" or \"json\", not \"{other}\""),
        }
    }
}

/// The level named `name` (`error`, `warn`, `info`, `debug`, `trace`).
pub fn parse_level(name: &str) -> anyhow::Result<Level> {
    name.parse()
        .map_err(|_| anyhow!("log_level must be error, warn, info, debug or trace, not \"{name}\""))
}

/// Sends this process's events to stderr in `format`, from `level` up.
pub fn init(format: LogFormat, level: Level) -> anyhow::Result<()> {
    let lines = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_target(false)
        .with_ansi(false);
    let installed = match format {
        LogFormat::Text => lines.try_init(),
        LogFormat::Json => lines.json().flatten_event(true).try_init(),
    };
    installed.map_err(|err| anyhow!("setting up the log: {err}"))
}
