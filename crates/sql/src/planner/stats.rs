//! Planner statistics gathered by `ANALYZE`: per table its row count and, per column, a sorted
//! sample and the number of distinct values in it. Shared by every session of a database.
//!
//! Without statistics the planner assumes an equality matches 0.5% of the rows and a range 10%,
//! so a fresh table still uses its indexes.

use std::collections::HashMap;
use std::ops::Bound;

use parking_lot::RwLock;
use steady_engine::catalog::TableDef;
use steady_engine::engine::Transaction;
use steady_engine::version::IndexId;
use steady_types::Value;

use crate::error::Result;
use crate::execution::aggregate::compare_nulls_last;
use crate::execution::executor::Row;

/// Rows sampled per table by `ANALYZE`.
pub const SAMPLE_ROWS: usize = 3_000;

const DEFAULT_EQUALITY: f64 = 0.005;
const DEFAULT_RANGE: f64 = 0.1;

/// What `ANALYZE` learnt about one column.
#[derive(Debug, Clone, Default)]
pub struct ColumnStats {
    /// Non-NULL sampled values, sorted.
    pub sample: Vec<Value>,
    pub distinct: usize,
    pub null_fraction: f64,
}

#[derive(Debug, Clone, Default)]
pub struct TableStats {
    pub rows: u64,
    pub columns: Vec<ColumnStats>,
}

/// Statistics of every analysed table, by table id.
#[derive(Debug, Default)]
pub struct Statistics {
    tables: RwLock<HashMap<IndexId, TableStats>>,
    /// Counts changes, so that a plan chosen from older statistics is chosen again.
    epoch: std::sync::atomic::AtomicU64,
}

impl Statistics {
    pub fn set(&self, table: IndexId, stats: TableStats) {
        self.tables.write().insert(table, stats);
        self.epoch.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    pub fn forget(&self, table: IndexId) {
        self.tables.write().remove(&table);
        self.epoch.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// How many times the statistics changed.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn rows(&self, table: IndexId) -> Option<u64> {
        self.tables.read().get(&table).map(|t| t.rows)
    }

    /// The estimated distinct non-NULL values of a column: those of the sample, or the table's
    /// non-NULL rows when nearly every sampled value differs (PostgreSQL's rule for a column it
    /// takes as unique).
    pub fn distinct(&self, table: IndexId, column: usize) -> Option<f64> {
        let tables = self.tables.read();
        let stats = tables.get(&table)?;
        let c = stats.columns.get(column)?;
        let unique = c.distinct as f64 >= 0.9 * c.sample.len() as f64;
        Some(match unique {
            true => stats.rows as f64 * (1.0 - c.null_fraction),
            false => c.distinct as f64,
        })
    }

    /// The fraction of rows with `column = value`: the non-NULL fraction over the estimated
    /// distinct values ([`Statistics::distinct`]).
    pub fn equality(&self, table: IndexId, column: usize) -> f64 {
        let null_fraction = {
            let tables = self.tables.read();
            match tables.get(&table).and_then(|t| t.columns.get(column)) {
                Some(c) => c.null_fraction,
                None => return DEFAULT_EQUALITY,
            }
        };
        match self.distinct(table, column) {
            Some(distinct) if distinct >= 1.0 => (1.0 - null_fraction) / distinct,
            _ => 0.0,
        }
    }

    /// The fraction of rows whose `column` lies between the bounds (`None`: open).
    pub fn range(
        &self,
        table: IndexId,
        column: usize,
        lower: Option<&Value>,
        upper: Option<&Value>,
    ) -> f64 {
        let tables = self.tables.read();
        let Some(c) = tables.get(&table).and_then(|t| t.columns.get(column)) else {
            return DEFAULT_RANGE;
        };
        if c.sample.is_empty() {
            return 0.0;
        }
        let start = lower.map_or(0, |v| {
            c.sample
                .partition_point(|s| compare_nulls_last(s, v).is_lt())
        });
        let end = upper.map_or(c.sample.len(), |v| {
            c.sample
                .partition_point(|s| compare_nulls_last(s, v).is_le())
        });
        let inside = end.saturating_sub(start) as f64 + 0.5;
        (inside / c.sample.len() as f64 * (1.0 - c.null_fraction)).min(1.0)
    }
}

/// Builds a table's statistics from its row count and a sample of its rows.
pub fn summarize(rows: u64, sample: Vec<Vec<Value>>, width: usize) -> TableStats {
    let columns = (0..width)
        .map(|c| {
            let mut values: Vec<Value> = sample
                .iter()
                .map(|r| r[c].clone())
                .filter(|v| !v.is_null())
                .collect();
            let nulls = sample.len() - values.len();
            values.sort_by(compare_nulls_last);
            let mut distinct = 0;
            for (i, v) in values.iter().enumerate() {
                if i == 0 || compare_nulls_last(&values[i - 1], v).is_ne() {
                    distinct += 1;
                }
            }
            ColumnStats {
                sample: values,
                distinct,
                null_fraction: if sample.is_empty() {
                    0.0
                } else {
                    nulls as f64 / sample.len() as f64
                },
            }
        })
        .collect();
    TableStats { rows, columns }
}

/// Row count and a uniform sample (reservoir) of a table's rows, for ANALYZE. Every row is
/// counted, but only the rows that enter the reservoir are decoded.
pub fn sample_table(txn: &mut Transaction, table: &TableDef) -> Result<(u64, Vec<Row>)> {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    let decoder = table.decoder(None);
    let decode = |bytes: &[u8]| {
        decoder.decode(bytes).map_err(|e| {
            steady_engine::error::EngineError::Corrupt(format!("undecodable row: {e:?}"))
        })
    };
    let mut sample = Vec::new();
    let mut seen: u64 = 0;
    for row in txn.scan_table(table, Bound::Unbounded, Bound::Unbounded)? {
        let (_, bytes) = row?;
        seen += 1;
        if sample.len() < SAMPLE_ROWS {
            sample.push(decode(&bytes)?);
        } else {
            let slot = rng.gen_range(0..seen);
            if let Some(entry) = sample.get_mut(slot as usize) {
                *entry = decode(&bytes)?;
            }
        }
    }
    Ok((seen, sample))
}
