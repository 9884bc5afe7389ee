//! Join order: which inputs of a tree of inner joins are joined first, and which side of each
//! join is hashed.
//!
//! A tree of inner joins (comma-separated or JOIN ... ON, under outer joins, filters and
//! projections too) is flattened into its inputs and conditions, then rebuilt left-deep. From
//! each input as the start, a greedy pass adds at each step the input some condition joins to
//! what is there (only when none is: any input — a cross product no order avoids) whose join
//! gives the fewest estimated rows; the start whose joins add up to the fewest rows wins (the
//! C_out cost of Cluet and Moerkotte). Each join hashes its smaller input. Conditions are placed
//! at the lowest join where every input they read is present, and a projection restores the
//! written column order. A tree whose conditions hold a subquery (which reads its node's row
//! through outer references) keeps its written order.
//!
//! Estimates: a table's rows from ANALYZE ([`UNKNOWN_ROWS`] without), times the selectivity of
//! its filter (`column = value` by the column's distinct values, other conditions
//! [`UNKNOWN_SELECTIVITY`]); a join on `a = b` keeps `1 / max(distinct a, distinct b)` of the
//! pairs (System R's rule), each distinct count at most its input's rows; any other condition
//! [`UNKNOWN_SELECTIVITY`].

use super::{and_all, column_equals_constant, join, key_condition, map_inputs, owned_conjuncts};
use crate::execution::expr::Expr;
use crate::execution::plan::{Access, JoinKind, Plan};
use crate::planner::access::conjuncts;
use crate::planner::stats::Statistics;
use crate::types::ops::CmpOp;

/// Rows assumed for a table without statistics, and for a table function.
pub(super) const UNKNOWN_ROWS: f64 = 1000.0;
/// The fraction of rows a condition the estimate cannot read keeps.
const UNKNOWN_SELECTIVITY: f64 = 0.33;
/// The most inputs a tree of inner joins may have to be reordered (one bit each in a `u64`).
const MAX_REORDERED: usize = 64;

/// One input of a tree of inner joins: its plan, where its columns start and how many there are
/// in the row of the tree as written, and its estimated rows.
struct Leaf {
    plan: Plan,
    start: usize,
    width: usize,
    rows: f64,
}

/// A condition over the written row: the inputs it reads (bits by leaf number) and, for an
/// equality of two inputs' columns, each input with its column's estimated distinct values.
struct Condition {
    expr: Expr,
    reads: u64,
    equality: Option<[(usize, f64); 2]>,
}

/// Orders every tree of inner joins in `plan` (see the module doc).
pub fn reorder(plan: Plan, stats: &Statistics) -> Plan {
    match plan {
        Plan::Join {
            kind: JoinKind::Inner,
            ..
        } if reorderable(&plan).is_some_and(|inputs| inputs <= MAX_REORDERED) => {
            reorder_inner(plan, stats)
        }
        other => map_inputs(other, &mut |input| reorder(input, stats)),
    }
}

/// How many inputs the tree of inner joins at the top of `plan` has, if none of its conditions
/// holds a subquery.
fn reorderable(plan: &Plan) -> Option<usize> {
    match plan {
        Plan::Join {
            kind: JoinKind::Inner,
            left,
            right,
            on,
            ..
        } => match !on.as_ref().is_some_and(Expr::holds_subquery) {
            true => Some(reorderable(left)? + reorderable(right)?),
            false => None,
        },
        _ => Some(1),
    }
}

fn reorder_inner(plan: Plan, stats: &Statistics) -> Plan {
    let width = match &plan {
        Plan::Join {
            left_width,
            right_width,
            ..
        } => left_width + right_width,
        _ => return plan,
    };
    let (mut leaves, mut exprs) = (Vec::new(), Vec::new());
    flatten(plan, (0, width), &mut leaves, &mut exprs, stats);
    let conditions: Vec<Condition> = exprs
        .into_iter()
        .map(|expr| describe(expr, &leaves, stats))
        .collect();
    let order = (0..leaves.len())
        .map(|start| greedy_from(start, &leaves, &conditions))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(order, _)| order)
        .unwrap_or_default();
    let (joined, position) = build(leaves, &order, conditions, (width, stats));
    match position.iter().enumerate().all(|(i, &p)| i == p) {
        true => joined,
        false => Plan::Project {
            input: Box::new(joined),
            exprs: position.into_iter().map(Expr::Column).collect(),
        },
    }
}

/// The inputs of the inner-join tree `plan` (its columns at `start` of `width` in the whole
/// row), and its conditions over the whole row.
fn flatten(
    plan: Plan,
    (start, width): (usize, usize),
    leaves: &mut Vec<Leaf>,
    conditions: &mut Vec<Expr>,
    stats: &Statistics,
) {
    match plan {
        Plan::Join {
            kind: JoinKind::Inner,
            left,
            right,
            keys,
            on,
            left_width,
            right_width,
        } => {
            flatten(*left, (start, left_width), leaves, conditions, stats);
            let right_start = start + left_width;
            flatten(
                *right,
                (right_start, right_width),
                leaves,
                conditions,
                stats,
            );
            let parts = keys
                .into_iter()
                .map(|key| key_condition(key, left_width))
                .chain(on.iter().flat_map(owned_conjuncts));
            conditions.extend(parts.map(|part| part.shifted(start)));
        }
        other => {
            let rows = estimate_rows(&other, stats);
            leaves.push(Leaf {
                plan: reorder(other, stats),
                start,
                width,
                rows,
            });
        }
    }
}

/// The leaf holding written column `column`.
fn leaf_of(column: usize, leaves: &[Leaf]) -> Option<usize> {
    leaves
        .iter()
        .position(|l| (l.start..l.start + l.width).contains(&column))
}

fn describe(expr: Expr, leaves: &[Leaf], stats: &Statistics) -> Condition {
    let mut reads = 0u64;
    expr.visit(&mut |e| {
        if let Some(at) = leaf_column(e).and_then(|i| leaf_of(i, leaves)) {
            reads |= 1 << at;
        }
    });
    let equality = match &expr {
        Expr::Compare(CmpOp::Eq, a, b) => match (&**a, &**b) {
            (Expr::Column(a), Expr::Column(b)) => {
                let side = |column: usize| {
                    let at = leaf_of(column, leaves)?;
                    Some((at, distinct(&leaves[at], column - leaves[at].start, stats)))
                };
                side(*a).zip(side(*b)).map(|(a, b)| [a, b])
            }
            _ => None,
        },
        _ => None,
    };
    Condition {
        expr,
        reads,
        equality,
    }
}

fn leaf_column(e: &Expr) -> Option<usize> {
    match e {
        Expr::Column(i) => Some(*i),
        _ => None,
    }
}

/// The estimated distinct values of a leaf's column: from the statistics of a scanned table,
/// at most the leaf's rows (as if unique where nothing is known).
fn distinct(leaf: &Leaf, column: usize, stats: &Statistics) -> f64 {
    let known = match &leaf.plan {
        Plan::Scan { table, .. } => stats.distinct(table.id, column),
        _ => None,
    };
    known.unwrap_or(leaf.rows).min(leaf.rows).max(1.0)
}

/// The estimated rows of joining `leaf` to the inputs `present` (estimated `rows`), and whether
/// a condition joins them.
fn joined_rows(
    (present, rows): (u64, f64),
    leaf: usize,
    leaves: &[Leaf],
    conditions: &[Condition],
) -> (f64, bool) {
    let bit = 1u64 << leaf;
    let mut selectivity = 1.0;
    let mut connected = false;
    for condition in conditions {
        let reads = condition.reads;
        if reads & bit == 0 || reads & present == 0 || reads & !(present | bit) != 0 {
            continue;
        }
        connected = true;
        selectivity *= match condition.equality {
            Some(sides) => {
                let clamp = |(at, values): (usize, f64)| match at == leaf {
                    true => values.min(leaves[leaf].rows),
                    false => values.min(rows),
                };
                1.0 / clamp(sides[0]).max(clamp(sides[1])).max(1.0)
            }
            None => UNKNOWN_SELECTIVITY,
        };
    }
    ((rows * leaves[leaf].rows * selectivity).max(1.0), connected)
}

/// The greedy order from `start` (see the module doc), each input with the estimated rows of
/// the join that adds it, and its cost: the sum of those.
fn greedy_from(
    start: usize,
    leaves: &[Leaf],
    conditions: &[Condition],
) -> (Vec<(usize, f64)>, f64) {
    let mut order = vec![(start, leaves[start].rows)];
    let (mut present, mut rows, mut cost) = (1u64 << start, leaves[start].rows, 0.0);
    while order.len() < leaves.len() {
        let next = (0..leaves.len())
            .filter(|at| present & (1 << at) == 0)
            .map(|at| (at, joined_rows((present, rows), at, leaves, conditions)))
            .min_by(|(_, (a, a_joined)), (_, (b, b_joined))| {
                b_joined.cmp(a_joined).then(a.total_cmp(b))
            });
        let Some((at, (joined, _))) = next else { break };
        order.push((at, joined));
        present |= 1 << at;
        rows = joined;
        cost += joined;
    }
    (order, cost)
}

/// A left-deep tree of `leaves` in `order` (each with the estimated rows once it is joined),
/// each join hashing its smaller input, each condition at the first join where every input it
/// reads is present (one reading none at the last); and where each of the `width` written
/// columns sits in its row.
fn build(
    mut leaves: Vec<Leaf>,
    order: &[(usize, f64)],
    mut conditions: Vec<Condition>,
    (width, stats): (usize, &Statistics),
) -> (Plan, Vec<usize>) {
    let take = |leaves: &mut Vec<Leaf>, at: usize| {
        std::mem::replace(&mut leaves[at].plan, Plan::single_row())
    };
    let Some(&(first, first_rows)) = order.first() else {
        return (Plan::single_row(), Vec::new());
    };
    let mut plan = take(&mut leaves, first);
    let mut layout: Vec<usize> = vec![first];
    let (mut present, mut rows) = (1u64 << first, first_rows);
    for (step, &(at, joined)) in order.iter().enumerate().skip(1) {
        let leaf_plan = take(&mut leaves, at);
        let (leaf_rows, leaf_width) = (leaves[at].rows, leaves[at].width);
        let built_width: usize = layout.iter().map(|&l| leaves[l].width).sum();
        let leaf_first = leaf_rows > rows;
        match leaf_first {
            true => layout.insert(0, at),
            false => layout.push(at),
        }
        present |= 1 << at;
        let last = step + 1 == order.len();
        let (here, later): (Vec<_>, Vec<_>) = conditions
            .into_iter()
            .partition(|c| c.reads & !present == 0 && (c.reads != 0 || last));
        conditions = later;
        let position = positions(layout.iter().map(|&l| &leaves[l]), width);
        let on = and_all(
            here.into_iter()
                .map(|c| c.expr.map_columns(&|i| position[i])),
        );
        plan = match leaf_first {
            true => join(
                leaf_plan,
                plan,
                JoinKind::Inner,
                on,
                (leaf_width, built_width),
                stats,
            ),
            false => join(
                plan,
                leaf_plan,
                JoinKind::Inner,
                on,
                (built_width, leaf_width),
                stats,
            ),
        };
        rows = joined;
    }
    let position = positions(layout.iter().map(|&l| &leaves[l]), width);
    let rest = and_all(
        conditions
            .into_iter()
            .map(|c| c.expr.map_columns(&|i| position[i])),
    );
    let plan = match rest {
        Some(predicate) => Plan::Filter {
            input: Box::new(plan),
            predicate,
        },
        None => plan,
    };
    (plan, position)
}

/// Where each of the `width` written columns sits in a row of the leaves `layout`, in order.
fn positions<'l>(layout: impl Iterator<Item = &'l Leaf>, width: usize) -> Vec<usize> {
    let mut position = vec![0; width];
    let mut next = 0;
    for leaf in layout {
        for (offset, slot) in position[leaf.start..leaf.start + leaf.width]
            .iter_mut()
            .enumerate()
        {
            *slot = next + offset;
        }
        next += leaf.width;
    }
    position
}

/// A rough row count of `plan`'s output, for ordering joins.
pub fn estimate_rows(plan: &Plan, stats: &Statistics) -> f64 {
    match plan {
        Plan::Scan {
            table,
            access,
            filter,
            ..
        } => {
            let rows = stats.rows(table.id).map_or(UNKNOWN_ROWS, |r| r as f64);
            let (range, equal_columns): (f64, &[usize]) = match access {
                Access::Full => (1.0, &[]),
                Access::Primary(range) | Access::Index(_, range) => {
                    let key = match access {
                        Access::Index(index, _) => &index.columns,
                        _ => &table.primary_key,
                    };
                    let equal = &key[..range.equal.len().min(key.len())];
                    let selectivity: f64 =
                        equal.iter().map(|&c| stats.equality(table.id, c)).product();
                    let bounded = range.lower.is_some() || range.upper.is_some();
                    let bounds = if bounded { UNKNOWN_SELECTIVITY } else { 1.0 };
                    (selectivity * bounds, equal)
                }
            };
            let filtered = filter.as_ref().map_or(1.0, |f| {
                filter_selectivity(f, table.id, equal_columns, stats)
            });
            (rows * range * filtered).max(1.0)
        }
        Plan::Values { rows, .. } => rows.len() as f64,
        Plan::Filter { input, .. } => estimate_rows(input, stats) * UNKNOWN_SELECTIVITY,
        Plan::Project { input, .. }
        | Plan::Sort { input, .. }
        | Plan::Window { input, .. }
        | Plan::ProjectSet { input, .. }
        | Plan::Distinct { input }
        | Plan::LockRows { input, .. }
        | Plan::Materialized { input, .. } => estimate_rows(input, stats),
        Plan::WithWrites { body, .. } => estimate_rows(body, stats),
        Plan::Limit { input, limit, .. } => match limit {
            Some(Expr::Literal(v)) => v.to_string().parse().unwrap_or(UNKNOWN_ROWS),
            _ => estimate_rows(input, stats),
        }
        .min(estimate_rows(input, stats)),
        Plan::Aggregate { groups, input, .. } if !groups.is_empty() => {
            estimate_rows(input, stats).sqrt().max(1.0)
        }
        Plan::Aggregate { .. } => 1.0,
        Plan::Join {
            left,
            right,
            keys,
            on,
            kind,
            ..
        } => {
            let (l, r) = (estimate_rows(left, stats), estimate_rows(right, stats));
            match kind {
                JoinKind::Anti => return l * UNKNOWN_SELECTIVITY,
                JoinKind::RightAnti => return r * UNKNOWN_SELECTIVITY,
                _ => {}
            }
            match (keys.is_empty(), on.is_some()) {
                (false, _) => l.max(r),
                (true, true) => l * r * UNKNOWN_SELECTIVITY,
                (true, false) => l * r,
            }
        }
        Plan::Lateral { left, right, .. } => {
            (estimate_rows(left, stats) * estimate_rows(right, stats)).max(1.0)
        }
        Plan::SetOp { left, right, .. } => estimate_rows(left, stats) + estimate_rows(right, stats),
        Plan::System(..)
        | Plan::Series { .. }
        | Plan::RecursiveUnion { .. }
        | Plan::WorkTable { .. } => UNKNOWN_ROWS,
        Plan::Insert(_) | Plan::Update(_) | Plan::Delete(_) => UNKNOWN_ROWS,
    }
}

/// The fraction of a table's rows `filter` keeps: each `column = value` conjunct by the
/// column's statistics (none for the `ranged` columns, whose equalities the scan's key range
/// already counts), any other conjunct by [`UNKNOWN_SELECTIVITY`].
fn filter_selectivity(
    filter: &Expr,
    table: steady_engine::version::IndexId,
    ranged: &[usize],
    stats: &Statistics,
) -> f64 {
    let mut parts = Vec::new();
    conjuncts(filter, &mut parts);
    parts
        .into_iter()
        .map(|part| match column_equals_constant(part) {
            Some((column, _)) if ranged.contains(&column) => 1.0,
            Some((column, _)) => stats.equality(table, column),
            None => UNKNOWN_SELECTIVITY,
        })
        .product()
}
