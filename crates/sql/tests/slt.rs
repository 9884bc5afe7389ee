//! The sqllogictest corpus (`tests/slt/*.slt`, verified against PostgreSQL 15 by
//! `tests/slt/validate_pg.py`) run against SteadyDB's SQL layer: each file in a fresh database,
//! through one session.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sqllogictest::{DBOutput, DefaultColumnType, Runner, DB};
use steady_sql::{Database, Session, SqlError};
use steady_types::{DataType, Value};

struct SteadyDb {
    session: Session,
}

fn column_type(ty: Option<DataType>) -> DefaultColumnType {
    match ty {
        Some(DataType::SmallInt | DataType::Integer | DataType::BigInt) => {
            DefaultColumnType::Integer
        }
        Some(DataType::Real | DataType::Double | DataType::Numeric { .. }) => {
            DefaultColumnType::FloatingPoint
        }
        _ => DefaultColumnType::Text,
    }
}

fn cell(value: &Value, ty: Option<&DataType>) -> String {
    match value {
        Value::Text(s) if s.is_empty() => "(empty)".to_owned(),
        other => steady_types::array::shown_text(other, ty),
    }
}

impl DB for SteadyDb {
    type Error = SqlError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SqlError> {
        let mut last = None;
        for result in self.session.execute(sql) {
            last = Some(result?);
        }
        let Some(result) = last else {
            return Ok(DBOutput::StatementComplete(0));
        };
        if !result.has_rows() {
            let count = result
                .tag
                .rsplit(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            return Ok(DBOutput::StatementComplete(count));
        }
        Ok(DBOutput::Rows {
            types: result.columns.iter().map(|c| column_type(c.ty)).collect(),
            rows: result
                .rows
                .iter()
                .map(|row| {
                    row.iter()
                        .zip(&result.columns)
                        .map(|(value, column)| cell(value, column.ty.as_ref()))
                        .collect()
                })
                .collect(),
        })
    }

    fn engine_name(&self) -> &str {
        "steady"
    }
}

fn open_database(dir: &Path) -> Arc<Database> {
    common::open_database(dir, &common::config(512))
}

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    files
}

#[test]
fn sqllogictest_corpus() {
    let only = std::env::var("SLT_FILE").ok();
    let mut failures = Vec::new();
    let files = corpus();
    assert!(files.len() >= 10, "the corpus is missing");
    for file in files {
        if only
            .as_deref()
            .is_some_and(|o| !file.to_string_lossy().contains(o))
        {
            continue;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let database = open_database(dir.path());
        let mut runner = Runner::new(|| {
            let session = database.session("steady");
            async move { Ok::<_, SqlError>(SteadyDb { session }) }
        });
        runner.add_label("steady");
        let records = sqllogictest::parse_file(&file).expect("the corpus parses");
        for record in records {
            if let Err(err) = runner.run(record) {
                failures.push(format!("{}", err.display(true)));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
