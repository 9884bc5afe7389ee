//! Access-path choice: which index (if any) a scan with a WHERE clause should read.
//!
//! The predicate is split into conjuncts; those of the form `column op value` (value free of the
//! scan's own columns: a literal, a parameter or an outer reference) give equalities and bounds.
//! For the primary key and each secondary index, the usable key range is the longest prefix of
//! equalities followed by bounds on the next column. A primary-key range is always taken (it reads
//! less than a full scan, in the same order); a secondary index only when the statistics say it
//! selects few enough rows that reading them one by one beats reading the table in order.
//! The whole predicate stays on the scan as its filter, so a range only has to be a superset.

use steady_engine::catalog::TableDef;
use steady_types::{DataType, Value};

use crate::execution::expr::Expr;
use crate::execution::plan::{Access, KeyRange, Plan};
use crate::planner::stats::Statistics;
use crate::types::ops::CmpOp;

/// Above this estimated fraction of rows a secondary index loses to a full scan.
const INDEX_SELECTIVITY_LIMIT: f64 = 0.2;
/// How much more a row read through a secondary index costs than one read in key order.
const RANDOM_READ_COST: f64 = 4.0;

/// Puts `predicate` on top of `plan`: into a bare table scan (choosing its access path), or as a
/// filter node.
pub fn filter(plan: Plan, predicate: Expr, stats: &Statistics) -> Plan {
    match plan {
        Plan::Scan {
            table,
            access: Access::Full,
            filter: None,
            columns,
        } => {
            let access = choose(&table, &predicate, stats);
            Plan::Scan {
                table,
                access,
                filter: Some(predicate),
                columns,
            }
        }
        other => Plan::Filter {
            input: Box::new(other),
            predicate,
        },
    }
}

/// One `column op value` conjunct.
struct Bound<'a> {
    column: usize,
    op: CmpOp,
    value: &'a Expr,
}

fn conjuncts<'a>(predicate: &'a Expr, out: &mut Vec<&'a Expr>) {
    match predicate {
        Expr::And(a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        other => out.push(other),
    }
}

fn bounds(predicate: &Expr) -> Vec<Bound<'_>> {
    let mut parts = Vec::new();
    conjuncts(predicate, &mut parts);
    parts
        .into_iter()
        .filter_map(|part| match part {
            Expr::Compare(op, a, b) => match (a.as_ref(), b.as_ref()) {
                (Expr::Column(c), v) if !v.uses_columns() && *op != CmpOp::NotEq => Some(Bound {
                    column: *c,
                    op: *op,
                    value: v,
                }),
                (v, Expr::Column(c)) if !v.uses_columns() && *op != CmpOp::NotEq => Some(Bound {
                    column: *c,
                    op: op.flipped(),
                    value: v,
                }),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The range an index with `columns` can read, and its estimated selectivity.
fn key_range(
    table: &TableDef,
    columns: &[usize],
    bounds: &[Bound<'_>],
    stats: &Statistics,
) -> Option<(KeyRange, f64)> {
    let types: Vec<DataType> = columns
        .iter()
        .map(|&c| table.columns[c].data_type)
        .collect();
    let mut range = KeyRange {
        types,
        ..KeyRange::default()
    };
    let mut selectivity = 1.0;
    for &column in columns {
        if let Some(eq) = bounds
            .iter()
            .find(|b| b.column == column && b.op == CmpOp::Eq)
        {
            range.equal.push(eq.value.clone());
            selectivity *= stats.equality(table.id, column);
            continue;
        }
        let lower = bounds
            .iter()
            .find(|b| b.column == column && matches!(b.op, CmpOp::Gt | CmpOp::GtEq));
        let upper = bounds
            .iter()
            .find(|b| b.column == column && matches!(b.op, CmpOp::Lt | CmpOp::LtEq));
        range.lower = lower.map(|b| b.value.clone());
        range.upper = upper.map(|b| b.value.clone());
        if lower.is_some() || upper.is_some() {
            let literal = |b: Option<&Bound<'_>>| match b.map(|b| b.value) {
                Some(Expr::Literal(v)) => Some(v.clone()),
                _ => None,
            };
            let (lo, hi): (Option<Value>, Option<Value>) = (literal(lower), literal(upper));
            selectivity *= stats.range(table.id, column, lo.as_ref(), hi.as_ref());
        }
        break;
    }
    (!range.is_empty_range()).then_some((range, selectivity))
}

fn choose(table: &TableDef, predicate: &Expr, stats: &Statistics) -> Access {
    let bounds = bounds(predicate);
    if bounds.is_empty() {
        return Access::Full;
    }
    let primary = (!table.primary_key.is_empty())
        .then(|| key_range(table, &table.primary_key, &bounds, stats))
        .flatten();
    let full_key = primary
        .as_ref()
        .is_some_and(|(r, _)| r.equal.len() == table.primary_key.len());
    if full_key {
        return Access::Primary(primary.map(|(r, _)| r).unwrap_or_default());
    }
    let best_index = table
        .indexes
        .iter()
        .filter_map(|index| {
            key_range(table, &index.columns, &bounds, stats).map(|(r, s)| (index, r, s))
        })
        .min_by(|a, b| a.2.total_cmp(&b.2));
    match (primary, best_index) {
        (Some((_, sp)), Some((index, range, si)))
            if si <= INDEX_SELECTIVITY_LIMIT && si * RANDOM_READ_COST < sp =>
        {
            Access::Index(index.clone(), range)
        }
        (Some((range, _)), _) => Access::Primary(range),
        (None, Some((index, range, si))) if si <= INDEX_SELECTIVITY_LIMIT => {
            Access::Index(index.clone(), range)
        }
        _ => Access::Full,
    }
}
