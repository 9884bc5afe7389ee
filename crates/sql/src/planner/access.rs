//! Access-path choice: which index (if any) a scan with a WHERE clause should read.
//!
//! The predicate is split into conjuncts; those of the form `column op value` (value free of the
//! scan's own columns: a literal, a parameter or an outer reference) give equalities and bounds.
//! For the primary key and each secondary index, the usable key range is the longest prefix of
//! equalities followed by bounds on the next column. A primary-key range is always taken (it reads
//! less than a full scan, in the same order); a secondary index only when the statistics say it
//! selects few enough rows that reading them one by one beats reading the table in order.
//! The predicate stays on the scan as its filter, so a range only has to be a superset — except
//! the conjuncts a primary-key range answers exactly, which the filter drops: `=`, `>=` and `<=`
//! on an integer key column against an integer literal or parameter (`encode_range` then places
//! the value exactly, one beyond the column type's range included, and a clustered row's key is
//! its primary key; a secondary index entry may be stale, so its conditions stay). A strict
//! bound (`>`, `<`) is read inclusively and stays.

use steady_engine::catalog::{IndexDef, TableDef};
use steady_types::{DataType, Value};

use crate::execution::expr::Expr;
use crate::execution::plan::{Access, KeyRange, Plan};
use crate::planner::stats::Statistics;
use crate::types::ops::CmpOp;

/// Above this estimated fraction of rows a secondary index loses to a full scan.
const INDEX_SELECTIVITY_LIMIT: f64 = 0.2;
/// How much more a row read through a secondary index costs than one read in key order.
const RANDOM_READ_COST: f64 = 4.0;

/// Puts `predicate` on top of `plan`: into a table scan (choosing its access path if it has none
/// yet), into a join or through a projection of plain expressions (see `join`), or as a filter
/// node.
pub fn filter(plan: Plan, predicate: Expr, stats: &Statistics) -> Plan {
    match plan {
        Plan::Scan {
            table,
            access: Access::Full,
            filter,
            columns,
        } => {
            let predicate = both(filter, predicate);
            let (access, exact) = choose(&table, &predicate, stats);
            Plan::Scan {
                table,
                access,
                filter: residual(predicate, &exact),
                columns,
            }
        }
        Plan::Scan {
            table,
            access,
            filter,
            columns,
        } => Plan::Scan {
            table,
            access,
            filter: Some(both(filter, predicate)),
            columns,
        },
        Plan::Filter {
            input,
            predicate: first,
        } => filter(*input, both(Some(first), predicate), stats),
        join @ Plan::Join { .. } => super::join::filter_join(join, predicate, stats),
        Plan::Project { input, exprs } if substitutable(&predicate, &exprs) => {
            let predicate = substitute(predicate, &exprs);
            Plan::Project {
                input: Box::new(filter(*input, predicate, stats)),
                exprs,
            }
        }
        other => Plan::Filter {
            input: Box::new(other),
            predicate,
        },
    }
}

/// `first AND then` (just `then` without a first).
fn both(first: Option<Expr>, then: Expr) -> Expr {
    match first {
        Some(first) => Expr::And(Box::new(first), Box::new(then)),
        None => then,
    }
}

/// Whether `predicate` over a projection's output can be evaluated below it instead, reading the
/// projected expressions: neither holds a subquery, an aggregate or a volatile function.
fn substitutable(predicate: &Expr, exprs: &[Expr]) -> bool {
    let mut reads = Vec::new();
    predicate.visit(&mut |e| {
        if let Expr::Column(i) = e {
            reads.push(*i);
        }
    });
    predicate.is_movable()
        && reads
            .iter()
            .all(|&i| exprs.get(i).is_some_and(Expr::is_movable))
}

/// `predicate` with each column replaced by the projected expression it reads.
fn substitute(predicate: Expr, exprs: &[Expr]) -> Expr {
    match predicate {
        Expr::Column(i) => exprs[i].clone(),
        other => match other.map_children(&mut |e| Ok(substitute(e, exprs))) {
            Ok(substituted) => substituted,
            Err(_) => unreachable!("substituting columns cannot fail"),
        },
    }
}

/// One `column op value` conjunct, and its position among the predicate's conjuncts.
struct Bound<'a> {
    column: usize,
    op: CmpOp,
    value: &'a Expr,
    part: usize,
}

impl Bound<'_> {
    /// Whether a key range holding this bound as an equality or an inclusive bound matches
    /// exactly the rows the conjunct does (see the module doc).
    fn is_exact(&self, table: &TableDef) -> bool {
        let integer = |t: Option<DataType>| {
            matches!(
                t,
                Some(DataType::SmallInt | DataType::Integer | DataType::BigInt)
            )
        };
        let value_type = match self.value {
            Expr::Literal(v) => v.data_type(),
            Expr::Param { ty, .. } => *ty,
            _ => None,
        };
        matches!(self.op, CmpOp::Eq | CmpOp::GtEq | CmpOp::LtEq)
            && integer(value_type)
            && integer(Some(table.columns[self.column].data_type))
    }
}

/// The predicate without the conjuncts at positions `exact`; `None` if nothing is left.
fn residual(predicate: Expr, exact: &[usize]) -> Option<Expr> {
    if exact.is_empty() {
        return Some(predicate);
    }
    let mut parts = Vec::new();
    conjuncts(&predicate, &mut parts);
    parts
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !exact.contains(i))
        .map(|(_, part)| part.clone())
        .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
}

pub(crate) fn conjuncts<'a>(predicate: &'a Expr, out: &mut Vec<&'a Expr>) {
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
        .enumerate()
        .filter_map(|(part, expr)| match expr {
            Expr::Compare(op, a, b) => match (a.as_ref(), b.as_ref()) {
                (Expr::Column(c), v) if !v.uses_columns() && *op != CmpOp::NotEq => Some(Bound {
                    column: *c,
                    op: *op,
                    value: v,
                    part,
                }),
                (v, Expr::Column(c)) if !v.uses_columns() && *op != CmpOp::NotEq => Some(Bound {
                    column: *c,
                    op: op.flipped(),
                    value: v,
                    part,
                }),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// A key range an index can read.
struct Found {
    range: KeyRange,
    selectivity: f64,
    /// The positions of the conjuncts the range answers exactly.
    exact: Vec<usize>,
}

/// The range an index with `columns` can read, and its estimated selectivity.
fn key_range(
    table: &TableDef,
    columns: &[usize],
    bounds: &[Bound<'_>],
    stats: &Statistics,
) -> Option<Found> {
    let types: Vec<DataType> = columns
        .iter()
        .map(|&c| table.columns[c].data_type)
        .collect();
    let mut range = KeyRange {
        types,
        ..KeyRange::default()
    };
    let mut selectivity = 1.0;
    let mut exact = Vec::new();
    let mut note_exact = |bound: Option<&Bound<'_>>| {
        if let Some(b) = bound.filter(|b| b.is_exact(table)) {
            exact.push(b.part);
        }
    };
    for &column in columns {
        if let Some(eq) = bounds
            .iter()
            .find(|b| b.column == column && b.op == CmpOp::Eq)
        {
            note_exact(Some(eq));
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
        note_exact(lower);
        note_exact(upper);
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
    (!range.is_empty_range()).then_some(Found {
        range,
        selectivity,
        exact,
    })
}

/// The access path for `predicate`, and the positions of the conjuncts it answers exactly.
fn choose(table: &TableDef, predicate: &Expr, stats: &Statistics) -> (Access, Vec<usize>) {
    let bounds = bounds(predicate);
    if bounds.is_empty() {
        return (Access::Full, Vec::new());
    }
    let primary = (!table.primary_key.is_empty())
        .then(|| key_range(table, &table.primary_key, &bounds, stats))
        .flatten();
    let by_primary = |found: Found| (Access::Primary(found.range), found.exact);
    let primary = match primary {
        Some(found) if found.range.equal.len() == table.primary_key.len() => {
            return by_primary(found)
        }
        other => other,
    };
    let best_index = table
        .indexes
        .iter()
        .filter_map(|index| key_range(table, &index.columns, &bounds, stats).map(|f| (index, f)))
        .min_by(|a, b| a.1.selectivity.total_cmp(&b.1.selectivity));
    let by_index =
        |index: &IndexDef, found: Found| (Access::Index(index.clone(), found.range), vec![]);
    match (primary, best_index) {
        (Some(p), Some((index, i)))
            if i.selectivity <= INDEX_SELECTIVITY_LIMIT
                && i.selectivity * RANDOM_READ_COST < p.selectivity =>
        {
            by_index(index, i)
        }
        (Some(p), _) => by_primary(p),
        (None, Some((index, i))) if i.selectivity <= INDEX_SELECTIVITY_LIMIT => by_index(index, i),
        _ => (Access::Full, Vec::new()),
    }
}
