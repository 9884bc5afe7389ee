//! Per-statement counters: the figures of `pg_stat_statements` (calls, execution time, rows of
//! each distinct statement of each role since the server started, or since
//! `pg_stat_statements_reset()`), as PostgreSQL's extension keeps them, always on.
//!
//! A statement is its text; a simple-protocol statement that ran as one of the session's
//! statement templates (`parser::template`) counts under the template's text, its value literals
//! replaced by `$n`, so `SELECT ... WHERE id = 1` and `... = 2` count as one, as PostgreSQL's
//! normalised `query` (another keeps its literals); a prepared statement's text already has its
//! parameters. The counters live in memory, in [`SHARDS`] maps each under its
//! own mutex chosen by the statement's hash, so sessions on different statements do not share a
//! lock. At most [`MAX_STATEMENTS`] statements are kept (PostgreSQL's `pg_stat_statements.max`):
//! a new one past that replaces its shard's least-called.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use parking_lot::Mutex;

/// How many maps the counters are spread over.
const SHARDS: usize = 16;
/// The most statements kept.
pub const MAX_STATEMENTS: usize = 5000;

/// Who ran which statement.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StatementKey {
    pub user: String,
    pub query: Arc<str>,
}

/// The counters of one statement.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StatementCounters {
    pub calls: u64,
    pub rows: u64,
    pub total_micros: u64,
    pub min_micros: u64,
    pub max_micros: u64,
    /// The sum of the squares of the times, in ms² (for the standard deviation).
    pub sum_squares_ms: f64,
}

impl StatementCounters {
    fn add(&mut self, micros: u64, rows: u64) {
        self.min_micros = match self.calls {
            0 => micros,
            _ => self.min_micros.min(micros),
        };
        self.max_micros = self.max_micros.max(micros);
        self.calls += 1;
        self.rows += rows;
        self.total_micros += micros;
        let ms = micros as f64 / 1000.0;
        self.sum_squares_ms += ms * ms;
    }

    /// The population standard deviation of the times, in ms (PostgreSQL's `stddev_exec_time`).
    pub fn stddev_ms(&self) -> f64 {
        if self.calls == 0 {
            return 0.0;
        }
        let n = self.calls as f64;
        let mean = self.total_micros as f64 / 1000.0 / n;
        (self.sum_squares_ms / n - mean * mean).max(0.0).sqrt()
    }
}

/// Every statement's counters: per statement text, each role's (usually one).
#[derive(Debug, Default)]
pub struct StatementStats {
    shards: [Mutex<Shard>; SHARDS],
}

type Shard = HashMap<Arc<str>, Vec<(String, StatementCounters)>>;

impl StatementStats {
    /// Counts one run of `query` by `user` that took `micros` and returned or changed `rows`
    /// (no allocation when the statement is known).
    pub fn record(&self, user: &str, query: Arc<str>, micros: u64, rows: u64) {
        let mut shard = self.shards[shard_of(&query)].lock();
        if let Some(users) = shard.get_mut(&query) {
            match users.iter_mut().find(|(u, _)| u == user) {
                Some((_, counters)) => counters.add(micros, rows),
                None => users.push((user.to_owned(), fresh(micros, rows))),
            }
            return;
        }
        if shard.len() >= MAX_STATEMENTS / SHARDS {
            let least = shard
                .iter()
                .min_by_key(|(_, users)| users.iter().map(|(_, c)| c.calls).sum::<u64>())
                .map(|(query, _)| Arc::clone(query));
            if let Some(least) = least {
                shard.remove(&least);
            }
        }
        shard.insert(query, vec![(user.to_owned(), fresh(micros, rows))]);
    }

    /// Every statement's counters, in no particular order.
    pub fn snapshot(&self) -> Vec<(StatementKey, StatementCounters)> {
        let mut all = Vec::new();
        for shard in &self.shards {
            for (query, users) in shard.lock().iter() {
                all.extend(users.iter().map(|(user, counters)| {
                    let key = StatementKey {
                        user: user.clone(),
                        query: Arc::clone(query),
                    };
                    (key, *counters)
                }));
            }
        }
        all
    }

    /// Forgets every statement (`pg_stat_statements_reset()`).
    pub fn reset(&self) {
        for shard in &self.shards {
            shard.lock().clear();
        }
    }
}

fn fresh(micros: u64, rows: u64) -> StatementCounters {
    let mut counters = StatementCounters::default();
    counters.add(micros, rows);
    counters
}

fn shard_of(query: &str) -> usize {
    (query_id(query) as u64 as usize) % SHARDS
}

/// A statement's id: a hash of its text (PostgreSQL's `queryid` hashes its parse tree).
pub fn query_id(query: &str) -> i64 {
    let mut hasher = DefaultHasher::new();
    query.hash(&mut hasher);
    hasher.finish() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_up_per_user_and_statement() {
        let stats = StatementStats::default();
        let q: Arc<str> = Arc::from("SELECT $1");
        stats.record("a", q.clone(), 1000, 1);
        stats.record("a", q.clone(), 3000, 2);
        stats.record("b", q.clone(), 5000, 0);
        let mut all = stats.snapshot();
        all.sort_by(|x, y| x.0.user.cmp(&y.0.user));
        let (a, b) = (all[0].1, all[1].1);
        assert_eq!((a.calls, a.rows, a.total_micros), (2, 3, 4000));
        assert_eq!((a.min_micros, a.max_micros), (1000, 3000));
        assert!((a.stddev_ms() - 1.0).abs() < 1e-9);
        assert_eq!((b.calls, b.min_micros), (1, 5000));
        stats.reset();
        assert!(stats.snapshot().is_empty());
    }

    #[test]
    fn at_most_the_maximum_is_kept_and_the_least_called_goes() {
        let stats = StatementStats::default();
        let hot: Arc<str> = Arc::from("SELECT hot");
        for _ in 0..3 {
            stats.record("a", hot.clone(), 1, 1);
        }
        for i in 0..(MAX_STATEMENTS * 2) {
            stats.record("a", Arc::from(format!("SELECT {i}")), 1, 1);
        }
        let all = stats.snapshot();
        assert!(all.len() <= MAX_STATEMENTS);
        assert!(all.iter().any(|(k, c)| k.query == hot && c.calls == 3));
    }
}
