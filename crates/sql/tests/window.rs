//! Window functions against a model: for random tables (small value domains, so partitions and
//! peers form, with NULLs), ranking functions, running and sliding sums over ROWS frames, sums
//! over RANGE frames with offsets and over GROUPS frames, and lag/lead equal what a direct
//! computation over the rows gives.

mod common;

use proptest::prelude::*;
use steady_engine::engine::EngineConfig;
use steady_sql::values::Value;
use steady_sql::{Database, Session};

fn open(dir: &std::path::Path) -> std::sync::Arc<Database> {
    let config = EngineConfig {
        background_purge: false,
        ..common::config(256)
    };
    common::open_database(dir, &config)
}

fn query(session: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    let mut results = session.execute(sql);
    results
        .pop()
        .expect("one result")
        .unwrap_or_else(|err| panic!("{sql}: {err}"))
        .rows
}

/// A row: (id, partition key, value), NULL as None.
type Row = (i64, Option<i64>, Option<i64>);

fn rows() -> impl Strategy<Value = Vec<(Option<i64>, Option<i64>)>> {
    let small = || prop_oneof![1 => Just(None), 4 => (0..3i64).prop_map(Some)];
    let value = prop_oneof![1 => Just(None), 4 => (0..5i64).prop_map(Some)];
    proptest::collection::vec((small(), value), 0..24)
}

fn sql(value: Option<i64>) -> String {
    value.map_or("NULL".into(), |v| v.to_string())
}

fn int(value: &Value) -> Option<i64> {
    match value {
        Value::Null => None,
        Value::Integer(v) => Some(i64::from(*v)),
        Value::BigInt(v) => Some(*v),
        other => other.to_string().parse().ok(),
    }
}

/// The rows of `table`'s partition `part`, in (v NULLS LAST, id) order.
fn partition_by_value(table: &[Row], part: Option<i64>) -> Vec<Row> {
    let mut rows: Vec<Row> = table.iter().filter(|r| r.1 == part).copied().collect();
    rows.sort_by_key(|r| (r.2.is_none(), r.2, r.0));
    rows
}

/// row_number, rank and dense_rank of row `id` over PARTITION BY p ORDER BY v.
fn ranks(table: &[Row], row: &Row) -> (i64, i64, i64) {
    let part = partition_by_value(table, row.1);
    let at = part.iter().position(|r| r.0 == row.0).unwrap();
    let rank = part.iter().position(|r| r.2 == row.2).unwrap() as i64 + 1;
    let mut values: Vec<Option<i64>> = part[..=at].iter().map(|r| r.2).collect();
    values.dedup();
    (at as i64 + 1, rank, values.len() as i64)
}

/// The sum of v over ROWS BETWEEN `before` PRECEDING AND `after` FOLLOWING, in id order within
/// the partition.
fn sliding_sum(table: &[Row], row: &Row, before: usize, after: usize) -> Option<i64> {
    let part: Vec<&Row> = table.iter().filter(|r| r.1 == row.1).collect();
    let at = part.iter().position(|r| r.0 == row.0).unwrap();
    let frame = &part[at.saturating_sub(before)..(at + after + 1).min(part.len())];
    frame.iter().filter_map(|r| r.2).reduce(|a, b| a + b)
}

/// The sum of id over RANGE BETWEEN `before` PRECEDING AND `after` FOLLOWING ordered by v: the
/// rows of the partition whose v lies within those distances of the row's (a NULL row: the
/// partition's NULL rows).
fn range_sum(table: &[Row], row: &Row, before: i64, after: i64) -> Option<i64> {
    let within = |v: Option<i64>| match (row.2, v) {
        (None, None) => true,
        (Some(x), Some(v)) => x - before <= v && v <= x + after,
        _ => false,
    };
    let part = table.iter().filter(|r| r.1 == row.1 && within(r.2));
    part.map(|r| r.0).reduce(|a, b| a + b)
}

/// The sum of id over GROUPS BETWEEN `before` PRECEDING AND `after` FOLLOWING ordered by v: the
/// rows of the peer groups (distinct v, NULLs last) within those counts of the row's group.
fn groups_sum(table: &[Row], row: &Row, before: usize, after: usize) -> Option<i64> {
    let mut groups: Vec<Option<i64>> = partition_by_value(table, row.1)
        .iter()
        .map(|r| r.2)
        .collect();
    groups.dedup();
    let at = groups.iter().position(|v| *v == row.2).unwrap();
    let reached = &groups[at.saturating_sub(before)..(at + after + 1).min(groups.len())];
    let part = table
        .iter()
        .filter(|r| r.1 == row.1 && reached.contains(&r.2));
    part.map(|r| r.0).reduce(|a, b| a + b)
}

/// v of the row `offset` places after `row` (before, if negative) in id order, else `default`.
fn shifted(table: &[Row], row: &Row, offset: isize, default: Option<i64>) -> Option<i64> {
    let at = table.iter().position(|r| r.0 == row.0).unwrap() as isize + offset;
    usize::try_from(at)
        .ok()
        .and_then(|at| table.get(at))
        .map_or(default, |r| r.2)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn window_functions_match_the_model(
        data in rows(),
        before in 0usize..3,
        after in 0usize..3,
        offset in -2isize..3,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let mut session = db.session("test");
        query(&mut session, "CREATE TABLE w (id bigint PRIMARY KEY, p bigint, v bigint)");
        let table: Vec<Row> = data
            .iter()
            .enumerate()
            .map(|(i, (p, v))| (i as i64 + 1, *p, *v))
            .collect();
        for (id, p, v) in &table {
            query(&mut session, &format!("INSERT INTO w VALUES ({id}, {}, {})", sql(*p), sql(*v)));
        }
        let got = query(&mut session, &format!(
            "SELECT id, \
               row_number() OVER (PARTITION BY p ORDER BY v, id), \
               rank() OVER (PARTITION BY p ORDER BY v), \
               dense_rank() OVER (PARTITION BY p ORDER BY v), \
               sum(v) OVER (PARTITION BY p ORDER BY id ROWS BETWEEN {before} PRECEDING AND {after} FOLLOWING), \
               lead(v, {offset}, -1) OVER (ORDER BY id), \
               sum(id) OVER (PARTITION BY p ORDER BY v RANGE BETWEEN {before} PRECEDING AND {after} FOLLOWING), \
               sum(id) OVER (PARTITION BY p ORDER BY v GROUPS BETWEEN {before} PRECEDING AND {after} FOLLOWING) \
             FROM w ORDER BY id"
        ));
        prop_assert_eq!(got.len(), table.len());
        for (row, values) in table.iter().zip(&got) {
            let (number, rank, dense) = ranks(&table, row);
            prop_assert_eq!(int(&values[1]), Some(number), "row_number of {:?}", row);
            prop_assert_eq!(int(&values[2]), Some(rank), "rank of {:?}", row);
            prop_assert_eq!(int(&values[3]), Some(dense), "dense_rank of {:?}", row);
            prop_assert_eq!(int(&values[4]), sliding_sum(&table, row, before, after), "sum of {:?}", row);
            prop_assert_eq!(int(&values[5]), shifted(&table, row, offset, Some(-1)), "lead of {:?}", row);
            let range = range_sum(&table, row, before as i64, after as i64);
            prop_assert_eq!(int(&values[6]), range, "RANGE sum of {:?}", row);
            prop_assert_eq!(int(&values[7]), groups_sum(&table, row, before, after), "GROUPS sum of {:?}", row);
        }
    }
}
