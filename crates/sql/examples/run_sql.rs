//! Runs SQL given as arguments against a fresh temporary database and prints each result: a quick
//! way to see what the SQL layer does with a statement.
//!
//! `cargo run -p steady-sql --example run_sql -- "CREATE TABLE t (a int)" "SELECT * FROM t"`

use steady_engine::engine::{Engine, EngineConfig};
use steady_sql::Database;

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = Engine::open(dir.path(), &EngineConfig::default()).expect("engine opens");
    let db = Database::new(engine, "steady");
    let mut session = db.session("steady");
    for sql in std::env::args().skip(1) {
        for result in session.execute(&sql) {
            match result {
                Ok(result) => {
                    let names: Vec<&str> = result.columns.iter().map(|c| c.name.as_str()).collect();
                    if result.has_rows() {
                        println!("{}", names.join(" | "));
                        for row in &result.rows {
                            let cells: Vec<String> = row.iter().map(|v| v.to_string()).collect();
                            println!("{}", cells.join(" | "));
                        }
                    }
                    println!("{}", result.tag);
                }
                Err(err) => println!("ERROR {err}"),
            }
        }
    }
}
