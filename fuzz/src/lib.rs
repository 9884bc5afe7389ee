//! What the fuzz targets share: a database in a temporary directory, set up by SQL.

use std::sync::Arc;

use steady_engine::engine::{Engine, EngineConfig};
use steady_sql::Database;

/// A database named `name` in a new temporary directory, after `setup` has run in a session of
/// `user`. The directory is left behind when the fuzzer exits (its database is never closed), so
/// the redo log is 32 MiB rather than the default 1 GiB.
pub fn database(name: &str, user: &str, setup: &str) -> (tempfile::TempDir, Arc<Database>) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut config = EngineConfig::default();
    config.store.log_capacity = 32 << 20;
    let engine = Engine::open(dir.path(), &config).expect("engine");
    let db = Database::new(engine, name);
    let mut session = db.session(user);
    for result in session.execute(setup) {
        result.expect("setup statement");
    }
    (dir, db)
}
