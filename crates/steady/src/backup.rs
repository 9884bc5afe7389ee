//! `steady backup DIR DEST`: an online physical backup (`steady_storage::backup`).
//!
//! When DIR is served (another process holds its lock), the server makes the copy: this command
//! connects to it (DIR's steady.toml gives its address and password) and runs
//! `SELECT steady_backup('DEST')`, so DEST is a path on the server's machine. When DIR is not
//! served, this command opens it (recovering it if it was not shut down cleanly) and makes the
//! copy itself. Either way DEST opens as DIR was at the end of the copy, and `steady check`
//! accepts it.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use steady_engine::engine::{Engine, EngineConfig};
use steady_storage::io::OsVfs;

pub fn run(dir: &Path, dest: &Path, listen: Option<&str>) -> anyhow::Result<ExitCode> {
    crate::data_dir::existing(dir)?;
    let dest = std::path::absolute(dest).with_context(|| format!("{}", dest.display()))?;
    let summary = match OsVfs::new(dir, false) {
        Ok(vfs) => {
            drop(vfs);
            copy_stopped(dir, &dest)?
        }
        Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
            ask_the_server(dir, &dest, listen)?
        }
        Err(err) => return Err(err).with_context(|| format!("opening {}", dir.display())),
    };
    println!(
        "backup of {} in {}: {summary}",
        dir.display(),
        dest.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Opens DIR here and copies it.
fn copy_stopped(dir: &Path, dest: &Path) -> anyhow::Result<String> {
    let mut config = EngineConfig {
        background_purge: false,
        ..EngineConfig::default()
    };
    config.store.recovery_watch = crate::progress::recovery_watch();
    let engine =
        Engine::open(dir, &config).with_context(|| format!("opening {}", dir.display()))?;
    let report = engine
        .backup_to(dest)
        .with_context(|| format!("backing up into {}", dest.display()))?;
    engine.close().context("closing the database")?;
    Ok(report.to_string())
}

/// Has the server of DIR make the copy.
fn ask_the_server(dir: &Path, dest: &Path, listen: Option<&str>) -> anyhow::Result<String> {
    let (address, password) = crate::serve::client_target(dir, listen)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut config = tokio_postgres::Config::new();
        config
            .host(address.ip().to_string())
            .port(address.port())
            .user("steady")
            .dbname("steady")
            .application_name("steady backup");
        if let Some(password) = &password {
            config.password(password);
        }
        let (client, connection) =
            config
                .connect(tokio_postgres::NoTls)
                .await
                .with_context(|| {
                    format!(
                        "{} is served; connecting to its server at {address}",
                        dir.display()
                    )
                })?;
        let connection = tokio::spawn(connection);
        let dest = dest.to_string_lossy().into_owned();
        let row = client
            .query_one("SELECT steady_backup($1::text)", &[&dest])
            .await
            .context("the server's backup")?;
        drop(client);
        let _ = connection.await;
        Ok(row.get::<_, String>(0))
    })
}
