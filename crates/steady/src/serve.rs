//! `steady serve`: open a data directory (created and initialised if new) and serve it over the
//! PostgreSQL wire protocol until SIGTERM or SIGINT.
//!
//! Settings come from `steady.toml` in the data directory, command-line flags overriding it:
//!
//! ```toml
//! listen = "127.0.0.1:5433"     # host:port
//! password = "secret"           # SCRAM-SHA-256 for every client; unset: trust, loopback only
//! buffer_pool_size = "512MB"    # bytes, or a number with kB / MB / GB (powers of 1024)
//! redo_log_size = "1GB"         # for a new directory only; at least 16MB, default 1GB
//! page_size = 16384             # for a new directory only
//! direct_io = false             # O_DIRECT data files
//! ssl = true                    # TLS for clients that ask (sslmode=require); default false
//! ssl_cert_file = "server.crt"  # PEM certificate chain, relative to the data directory
//! ssl_key_file = "server.key"   # PEM private key, relative to the data directory
//! log_format = "json"           # "text" (default) or "json", one line per event on stderr
//! log_level = "info"            # error, warn, info (default), debug, trace
//! log_min_duration_statement = "250ms" # log statements taking this long; default -1 (off)
//! metrics_listen = "127.0.0.1:9187" # Prometheus text endpoint (GET /metrics); default off
//! ```
//!
//! Shutdown closes the listener, cancels running statements, drops every connection (open
//! transactions roll back), then closes the engine with a checkpoint, so the next start needs no
//! recovery. Start and shutdown each log one line to stderr with their timing.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use serde::Deserialize;
use steady_engine::engine::{Engine, EngineConfig};
use steady_server::tls::TlsFiles;
use steady_server::{Server, ServerConfig};
use steady_sql::Database;
use steady_storage::store::StoreConfig;
use steady_storage::wal::MIN_CAPACITY;
use tokio::signal::unix::{signal, Signal, SignalKind};

/// The address served when neither steady.toml nor `--listen` names one.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:5433";

/// The configuration file's name inside the data directory.
const CONFIG_FILE: &str = "steady.toml";

/// The database's name (any name a client asks for means this one).
const DATABASE_NAME: &str = "steady";

/// What the command line says.
pub struct Options {
    pub data: PathBuf,
    pub listen: Option<String>,
}

/// Where a client on this machine reaches the server of `dir` (`--listen`, else its
/// steady.toml's `listen`, else the default; an unspecified address is reached on loopback),
/// and the password it asks for, if any.
pub fn client_target(
    dir: &Path,
    listen: Option<&str>,
) -> anyhow::Result<(std::net::SocketAddr, Option<String>)> {
    let file = FileConfig::load(dir)?;
    let text = listen
        .map(str::to_owned)
        .or(file.listen)
        .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
    let mut address: std::net::SocketAddr = text
        .parse()
        .with_context(|| format!("the listen address {text}"))?;
    if address.ip().is_unspecified() {
        address.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    Ok((address, file.password))
}

/// The contents of steady.toml.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    password: Option<String>,
    buffer_pool_size: Option<Size>,
    redo_log_size: Option<Size>,
    page_size: Option<usize>,
    direct_io: Option<bool>,
    ssl: Option<bool>,
    ssl_cert_file: Option<PathBuf>,
    ssl_key_file: Option<PathBuf>,
    log_format: Option<String>,
    log_level: Option<String>,
    log_min_duration_statement: Option<Millis>,
    metrics_listen: Option<String>,
}

/// A duration setting: milliseconds as a number, or text with a unit (`"250ms"`, `"2s"`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Millis {
    Number(i64),
    Text(String),
}

impl Millis {
    fn setting(&self) -> String {
        match self {
            Millis::Number(ms) => ms.to_string(),
            Millis::Text(text) => text.clone(),
        }
    }
}

/// A size in bytes, written as a number or as text with a unit.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Size {
    Bytes(u64),
    Text(String),
}

impl FileConfig {
    /// Sets the process's log up as `log_format` and `log_level` say.
    fn start_log(&self) -> anyhow::Result<()> {
        let format = match &self.log_format {
            Some(name) => crate::logging::LogFormat::parse(name)?,
            None => crate::logging::LogFormat::Text,
        };
        let level = match &self.log_level {
            Some(name) => crate::logging::parse_level(name)?,
            None => tracing::Level::INFO,
        };
        crate::logging::init(format, level)
    }

    /// Reads `DIR/steady.toml`; a missing file (or directory) means all defaults.
    fn load(dir: &Path) -> anyhow::Result<FileConfig> {
        let path = dir.join(CONFIG_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                toml::from_str(&text).with_context(|| format!("reading {}", path.display()))
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(FileConfig::default()),
            Err(err) => Err(err).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// The TLS certificate and key when `ssl = true` (PostgreSQL's default names in the data
    /// directory unless given); the files named without `ssl = true` are an error, not ignored.
    fn tls_files(&self, dir: &Path) -> anyhow::Result<Option<TlsFiles>> {
        if self.ssl != Some(true) {
            if self.ssl_cert_file.is_some() || self.ssl_key_file.is_some() {
                bail!("ssl_cert_file and ssl_key_file need ssl = true in {CONFIG_FILE}");
            }
            return Ok(None);
        }
        let path = |given: &Option<PathBuf>, default: &str| {
            dir.join(given.clone().unwrap_or_else(|| PathBuf::from(default)))
        };
        Ok(Some(TlsFiles {
            certificate: path(&self.ssl_cert_file, "server.crt"),
            key: path(&self.ssl_key_file, "server.key"),
        }))
    }

    fn engine_config(&self) -> anyhow::Result<EngineConfig> {
        let mut store = StoreConfig::default();
        if let Some(size) = &self.buffer_pool_size {
            store.buffer_pool_bytes = size.bytes()?;
        }
        if let Some(size) = &self.redo_log_size {
            store.log_capacity = size.bytes()? as u64;
            if store.log_capacity < MIN_CAPACITY {
                bail!(
                    "redo_log_size in {CONFIG_FILE} must be at least {} MB",
                    MIN_CAPACITY >> 20
                );
            }
        }
        if let Some(page_size) = self.page_size {
            store.page_size = page_size;
        }
        if let Some(direct_io) = self.direct_io {
            store.direct_io = direct_io;
        }
        Ok(EngineConfig {
            store,
            ..EngineConfig::default()
        })
    }
}

impl Size {
    fn bytes(&self) -> anyhow::Result<usize> {
        let text = match self {
            Size::Bytes(n) => return Ok(usize::try_from(*n)?),
            Size::Text(text) => text.trim(),
        };
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let shift = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "kb" | "kib" => 10,
            "mb" | "mib" => 20,
            "gb" | "gib" => 30,
            "tb" | "tib" => 40,
            _ => bail!("unknown size unit in \"{text}\" (use kB, MB, GB or TB)"),
        };
        let number: usize = number
            .parse()
            .with_context(|| format!("reading the size \"{text}\""))?;
        number
            .checked_mul(1 << shift)
            .with_context(|| format!("the size \"{text}\" is too large"))
    }
}

/// The redo log is a ring sized when its directory is created: a `redo_log_size` that differs
/// from an existing directory's log is said, not silently ignored.
fn warn_of_kept_log_size(engine: &Engine, config: &EngineConfig) {
    let Some(wal) = engine.store().pool().wal() else {
        return;
    };
    let asked = config.store.log_capacity.div_ceil(4096) * 4096;
    if wal.capacity() != asked {
        tracing::warn!(
            "redo_log_size applies when a data directory is created: this directory's redo log \
             stays {} MiB (asked for {} MiB)",
            wal.capacity() >> 20,
            asked >> 20
        );
    }
}

pub fn run(options: &Options) -> anyhow::Result<ExitCode> {
    let file = FileConfig::load(&options.data)?;
    file.start_log()?;
    let mut engine_config = file.engine_config()?;
    engine_config.store.recovery_watch = crate::progress::recovery_watch();
    let config = ServerConfig {
        listen: options
            .listen
            .clone()
            .or_else(|| file.listen.clone())
            .unwrap_or_else(|| DEFAULT_LISTEN.to_owned()),
        password: file.password.clone(),
        tls: file.tls_files(&options.data)?,
    };
    let named: Vec<&Path> = config
        .tls
        .iter()
        .flat_map(|tls| [tls.certificate.as_path(), tls.key.as_path()])
        .collect();
    crate::data_dir::check(&options.data, &named)?;
    let opening = Instant::now();
    let engine = Engine::open(&options.data, &engine_config)
        .with_context(|| format!("opening {}", options.data.display()))?;
    tracing::info!(
        "opened {} in {:.2} s",
        options.data.display(),
        opening.elapsed().as_secs_f64()
    );
    if file.redo_log_size.is_some() {
        warn_of_kept_log_size(&engine, &engine_config);
    }
    let db = Database::new(Arc::clone(&engine), DATABASE_NAME);
    if let Some(threshold) = &file.log_min_duration_statement {
        db.set_setting_default("log_min_duration_statement", &threshold.setting())
            .map_err(|err| anyhow::anyhow!("log_min_duration_statement in {CONFIG_FILE}: {err}"))?;
    }
    let runtime = tokio::runtime::Runtime::new().context("starting the runtime")?;
    let served = runtime.block_on(serve(db, &config, file.metrics_listen.as_deref()));
    let closing = Instant::now();
    drop(runtime);
    let closed = engine.close().context("closing the database");
    served?;
    closed?;
    tracing::info!(
        "shut down cleanly in {:.2} s",
        closing.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// Serves until a signal, then waits for every session to end; with `metrics_listen`, answers
/// Prometheus scrapes there meanwhile.
async fn serve(
    db: Arc<Database>,
    config: &ServerConfig,
    metrics_listen: Option<&str>,
) -> anyhow::Result<()> {
    let signals = Signals::install()?;
    let metrics = match metrics_listen {
        Some(address) => Some(
            tokio::net::TcpListener::bind(address)
                .await
                .with_context(|| format!("binding metrics_listen {address}"))?,
        ),
        None => None,
    };
    let server = Server::bind(Arc::clone(&db), config).await?;
    let auth = if config.password.is_some() {
        "password authentication"
    } else {
        "trust, loopback clients only"
    };
    let tls = if config.tls.is_some() { ", TLS" } else { "" };
    tracing::info!("listening on {} ({auth}{tls})", server.local_addr()?);
    if let Some(listener) = metrics {
        tracing::info!("metrics on http://{}/metrics", listener.local_addr()?);
        tokio::spawn(crate::metrics::serve(listener, db));
    }
    let served = server
        .run(async {
            let name = signals.recv().await;
            tracing::info!("{name} received, shutting down");
        })
        .await;
    if let Err(err) = served {
        // Sessions still hold the engine, so it cannot close; every acknowledged commit is in
        // the redo log, and the next start recovers from it.
        tracing::error!("{err}; exiting without a clean shutdown");
        std::process::exit(1);
    }
    Ok(())
}

/// The signals that stop the server.
struct Signals {
    terminate: Signal,
    interrupt: Signal,
}

impl Signals {
    fn install() -> anyhow::Result<Signals> {
        Ok(Signals {
            terminate: signal(SignalKind::terminate()).context("installing a SIGTERM handler")?,
            interrupt: signal(SignalKind::interrupt()).context("installing a SIGINT handler")?,
        })
    }

    /// Waits for one and names it.
    async fn recv(mut self) -> &'static str {
        tokio::select! {
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.interrupt.recv() => "SIGINT",
        }
    }
}
