//! How each join finds its pairs, chosen once the order is set: an index nested loop, or a hash
//! join hashing its smaller side.
//!
//! Index nested loops: a join whose one side is a table read whole, with an index on a column of
//! a hash key, and whose other side is small, looks each small-side row's partners up in the
//! index instead of reading and hashing the whole table.
//!
//! The lookup side becomes a scan run once per row of the other side (a [`Plan::Lateral`]): its
//! WHERE holds every key equality with the other side's value as an outer reference, so the
//! access path choice of `access::filter` picks the index (an outer reference is never taken as
//! answering a conjunct exactly, so every equality is still checked on the row). The rest of the
//! join's condition stays on the join. Chosen when the estimated lookups cost less than reading
//! the table in order; for an inner join either side may be the looked-up one (a projection then
//! restores the column order), for a LEFT join only the right.
//!
//! Costs are in rows read in key order (a full scan of a table of n rows costs n). Lookups cost
//! [`LOOKUP_SETUP_COST`] once, [`DESCENT_COST`] per small-side row and, per row found, 1 through
//! the primary key (the rows of one key are neighbours on a leaf) or
//! [`SECONDARY_FETCH_COST`] through a secondary index (each row found is a descent of the
//! primary key, in key order). Measured on a 100,000-row table: a full scan reads a row in about
//! 0.06 µs, a primary-key lookup takes about 1 µs, a row found through a secondary index about
//! 0.8 µs. The setup cost is PostgreSQL's view that a lookup into a table of a few hundred rows
//! gains nothing over hashing it (its first probe reads index and heap pages at random), which
//! keeps the choice the same in kind as PostgreSQL's: hash joins of small tables and of large
//! fan-outs through secondary indexes, lookups of few rows in large tables.

use super::order::UNKNOWN_ROWS;
use super::{and_all, estimate_rows, map_inputs};
use crate::execution::expr::Expr;
use crate::execution::plan::{Access, JoinKey, JoinKind, Plan};
use crate::planner::access;
use crate::planner::stats::Statistics;
use crate::types::ops::CmpOp;

/// The cost of starting to look rows up in a table, in rows read in key order.
const LOOKUP_SETUP_COST: f64 = 200.0;
/// The cost of one lookup's descent of an index, in rows read in key order.
const DESCENT_COST: f64 = 20.0;
/// The cost of a row found through a secondary index (a descent of the primary key), in rows
/// read in key order.
const SECONDARY_FETCH_COST: f64 = 15.0;

/// `plan` with each join that gains by it turned into an index nested loop (see the module doc).
pub fn join_methods(plan: Plan, stats: &Statistics) -> Plan {
    match map_inputs(plan, &mut |input| join_methods(input, stats)) {
        join @ Plan::Join { .. } => lookup_join(join, stats),
        other => other,
    }
}

/// The join as an index nested loop if that is estimated cheaper, else unchanged.
fn lookup_join(join: Plan, stats: &Statistics) -> Plan {
    let Plan::Join {
        left,
        right,
        kind,
        keys,
        on,
        left_width,
        right_width,
    } = join
    else {
        return join;
    };
    let (left_rows, right_rows) = (estimate_rows(&left, stats), estimate_rows(&right, stats));
    if matches!(kind, JoinKind::Inner | JoinKind::Left) {
        let lookup = cheaper_lookup(&right, left_rows, &keys, |k| (&k.right, &k.left), stats);
        if let Some(lookup) = lookup {
            return Plan::Lateral {
                left,
                right: Box::new(lookup),
                kind,
                on,
                right_width,
            };
        }
    }
    if kind == JoinKind::Inner {
        let lookup = cheaper_lookup(&left, right_rows, &keys, |k| (&k.left, &k.right), stats);
        if let Some(lookup) = lookup {
            return swapped_lookup(*right, lookup, on, (left_width, right_width));
        }
    }
    let outer = matches!(kind, JoinKind::Left | JoinKind::Right | JoinKind::Anti);
    if outer && right_rows > 2.0 * left_rows {
        return turned_around(*left, *right, kind, keys, on, (left_width, right_width));
    }
    Plan::Join {
        left,
        right,
        kind,
        keys,
        on,
        left_width,
        right_width,
    }
}

/// The outer join `left kind right` as `right (the other kind) left`, so that the old left side
/// is the hashed one, with a projection restoring the column order.
fn turned_around(
    left: Plan,
    right: Plan,
    kind: JoinKind,
    keys: Vec<JoinKey>,
    on: Option<Expr>,
    (left_width, right_width): (usize, usize),
) -> Plan {
    let swap = swapped(left_width, right_width);
    let kind = match kind {
        JoinKind::Left => JoinKind::Right,
        JoinKind::Anti => JoinKind::RightAnti,
        _ => JoinKind::Left,
    };
    let keys = keys
        .into_iter()
        .map(|k| JoinKey {
            left: k.right,
            right: k.left,
        })
        .collect();
    let join = Plan::Join {
        left: Box::new(right),
        right: Box::new(left),
        kind,
        keys,
        on: on.map(|on| on.map_columns(&swap)),
        left_width: right_width,
        right_width: left_width,
    };
    in_written_order(join, (left_width, right_width))
}

/// Where column `i` of a row of `first_width` then `second_width` columns is once its two parts
/// are swapped.
fn swapped(first_width: usize, second_width: usize) -> impl Fn(usize) -> usize {
    move |i| match i < first_width {
        true => second_width + i,
        false => i - first_width,
    }
}

/// `joined` (its inputs swapped) projected back to the written order of `first_width` then
/// `second_width` columns.
fn in_written_order(joined: Plan, (first_width, second_width): (usize, usize)) -> Plan {
    let swap = swapped(first_width, second_width);
    Plan::Project {
        input: Box::new(joined),
        exprs: (0..first_width + second_width)
            .map(|i| Expr::Column(swap(i)))
            .collect(),
    }
}

/// `Lateral(small, lookup)` with the columns put back in the written order (the looked-up
/// table's first) and the join's condition renumbered for the swapped row.
fn swapped_lookup(small: Plan, lookup: Plan, on: Option<Expr>, widths: (usize, usize)) -> Plan {
    let (lookup_width, small_width) = widths;
    let swap = swapped(lookup_width, small_width);
    let lateral = Plan::Lateral {
        left: Box::new(small),
        right: Box::new(lookup),
        kind: JoinKind::Inner,
        on: on.map(|on| on.map_columns(&swap)),
        right_width: lookup_width,
    };
    in_written_order(lateral, widths)
}

/// The scan of the table `side` reads whole run as a lookup per row of the other side (see
/// [`lookup_scan`]), if an index serves and `rows` lookups are estimated to cost less than
/// reading the table in order.
fn cheaper_lookup(
    side: &Plan,
    rows: f64,
    keys: &[JoinKey],
    parts: impl Fn(&JoinKey) -> (&Expr, &Expr),
    stats: &Statistics,
) -> Option<Plan> {
    let Plan::Scan { table, .. } = side else {
        return None;
    };
    let lookup = lookup_scan(side, keys, parts, stats)?;
    let table_rows = stats.rows(table.id).map_or(UNKNOWN_ROWS, |r| r as f64);
    (lookups_cost(&lookup, rows, stats) < table_rows).then_some(lookup)
}

/// The estimated cost of running `lookup` (an index scan with outer references) `rows` times,
/// in rows read in key order (see the module doc).
fn lookups_cost(lookup: &Plan, rows: f64, stats: &Statistics) -> f64 {
    let fetch_cost = match lookup {
        Plan::Scan {
            access: Access::Index(..),
            ..
        } => SECONDARY_FETCH_COST,
        _ => 1.0,
    };
    let found = estimate_rows(lookup, stats);
    LOOKUP_SETUP_COST + rows * (DESCENT_COST + found * fetch_cost)
}

/// The scan of `side` (a table read whole) run per row of the other side: its filter with the
/// key equalities added, each `column = outer value` (`parts` gives a key's column expression
/// on this side and its value expression on the other), its access path chosen again. None if
/// an expression holds a subquery, or no index serves.
fn lookup_scan(
    side: &Plan,
    keys: &[JoinKey],
    parts: impl Fn(&JoinKey) -> (&Expr, &Expr),
    stats: &Statistics,
) -> Option<Plan> {
    let Plan::Scan {
        table,
        access: Access::Full,
        filter,
        columns,
    } = side
    else {
        return None;
    };
    let equalities = keys.iter().map(|k| {
        let (column, value) = parts(k);
        Some(Expr::Compare(
            CmpOp::Eq,
            Box::new(column.clone()),
            Box::new(as_outer(value)?),
        ))
    });
    let equalities: Vec<Expr> = equalities.collect::<Option<_>>()?;
    let filter = match filter {
        Some(filter) => Some(one_level_down(filter)?),
        None => None,
    };
    let predicate = and_all(filter.into_iter().chain(equalities))?;
    let scan = Plan::Scan {
        table: table.clone(),
        access: Access::Full,
        filter: None,
        columns: columns.clone(),
    };
    let lookup = access::filter(scan, predicate, stats);
    match &lookup {
        Plan::Scan {
            access: Access::Full,
            ..
        } => None,
        _ => Some(lookup),
    }
}

/// `expr` over the other side's row, read from inside the lookup scan: its columns as outer
/// references of depth 1, its outer references one level deeper. None if it holds a subquery.
fn as_outer(expr: &Expr) -> Option<Expr> {
    renumbered(expr.clone(), &|e| match e {
        Expr::Column(index) => Expr::Outer { depth: 1, index },
        other => other,
    })
}

/// `expr` moved into a scan run per row of another input: its outer references one level
/// deeper. None if it holds a subquery.
fn one_level_down(expr: &Expr) -> Option<Expr> {
    renumbered(expr.clone(), &|e| e)
}

/// `expr` with `column` applied to its columns and its outer references one level deeper;
/// None if it holds a subquery (whose plan reads the row through references this cannot
/// renumber).
fn renumbered(expr: Expr, column: &dyn Fn(Expr) -> Expr) -> Option<Expr> {
    (!expr.holds_subquery()).then(|| deeper(expr, column))
}

fn deeper(expr: Expr, column: &dyn Fn(Expr) -> Expr) -> Expr {
    match expr {
        Expr::Outer { depth, index } => Expr::Outer {
            depth: depth + 1,
            index,
        },
        e @ Expr::Column(_) => column(e),
        other => match other.map_children(&mut |e| Ok(deeper(e, column))) {
            Ok(mapped) => mapped,
            Err(_) => unreachable!("renumbering references cannot fail"),
        },
    }
}
