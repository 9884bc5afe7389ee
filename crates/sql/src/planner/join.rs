//! Where the parts of a join's condition are evaluated, and how its pairs are found.
//!
//! [`join`] builds every join node from the FROM clause. Its condition and any WHERE clause above
//! it ([`filter_join`], called by `access::filter`) are split into conjuncts, and each goes as far
//! down as its meaning allows:
//!
//! * a conjunct that reads one side only goes into that side — where it may choose the side's
//!   index path — unless that side is null-extended by the join: for a WHERE conjunct, a side
//!   whose rows the join may invent (the right of a LEFT join, the left of a RIGHT join, both of a
//!   FULL one); for an ON conjunct, a side whose rows are kept whatever the condition says (the
//!   left of a LEFT join, the right of a RIGHT join, both of a FULL one);
//! * a WHERE conjunct that reads both sides of an inner join becomes part of its condition;
//! * a conjunct with a subquery (which reads the row of the node it sits on through outer
//!   references), an aggregate or a volatile function, or that reads no column, stays where it
//!   was written.
//!
//! So `FROM a, b, c WHERE a.x = b.x AND b.x = c.x` joins on its conditions instead of filtering a
//! cross product. Of what stays in the condition, each `left = right` conjunct whose sides read one
//! side of the join each becomes a hash key ([`JoinKey`]): the executor then finds a left row's
//! partners by hashing instead of testing every pair, and tests only the rest of the condition.

use crate::execution::expr::Expr;
use crate::execution::plan::{Access, JoinKey, JoinKind, Plan};
use crate::planner::access::{self, conjuncts};
use crate::planner::stats::Statistics;
use crate::types::ops::CmpOp;

/// Which side of a join a conjunct reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Left,
    Right,
    Both,
    /// Reads no column, or must stay where it is (see the module doc).
    Fixed,
}

fn side(expr: &Expr, left_width: usize) -> Side {
    let (mut left, mut right, mut fixed) = (false, false, false);
    expr.visit(&mut |e| match e {
        Expr::Column(i) if *i < left_width => left = true,
        Expr::Column(_) => right = true,
        Expr::Subquery(_) | Expr::AggRef(_) => fixed = true,
        Expr::Call(function, _) if function.volatile => fixed = true,
        _ => {}
    });
    match (fixed, left, right) {
        (false, true, false) => Side::Left,
        (false, false, true) => Side::Right,
        (false, true, true) => Side::Both,
        _ => Side::Fixed,
    }
}

/// A join of `left` and `right` on `on`, with what it can of `on` pushed into its inputs and its
/// equalities as hash keys.
pub fn join(
    left: Plan,
    right: Plan,
    kind: JoinKind,
    on: Option<Expr>,
    (left_width, right_width): (usize, usize),
    stats: &Statistics,
) -> Plan {
    let (mut to_left, mut to_right, mut kept) = (Vec::new(), Vec::new(), Vec::new());
    for part in on.iter().flat_map(owned_conjuncts) {
        match (side(&part, left_width), kind) {
            (Side::Left, JoinKind::Inner | JoinKind::Right) => to_left.push(part),
            (Side::Right, JoinKind::Inner | JoinKind::Left) => {
                to_right.push(part.map_columns(&|i| i - left_width))
            }
            _ => kept.push(part),
        }
    }
    derive_constants(&kept, kind, left_width, (&mut to_left, &mut to_right));
    let left = push(left, to_left, stats);
    let right = push(right, to_right, stats);
    let (keys, rest): (Vec<_>, Vec<_>) = kept
        .into_iter()
        .map(|part| key_of(part, left_width))
        .partition(Result::is_ok);
    Plan::Join {
        left: Box::new(left),
        right: Box::new(right),
        kind,
        keys: keys.into_iter().filter_map(Result::ok).collect(),
        on: and_all(rest.into_iter().filter_map(Result::err)),
        left_width,
        right_width,
    }
}

/// `predicate` (a WHERE clause, or part of one) over the join `plan`: pushed into the join or
/// its inputs where its meaning allows, the rest as a filter above it.
pub fn filter_join(plan: Plan, predicate: Expr, stats: &Statistics) -> Plan {
    let Plan::Join {
        left,
        right,
        kind,
        keys,
        on,
        left_width,
        right_width,
    } = plan
    else {
        return Plan::Filter {
            input: Box::new(plan),
            predicate,
        };
    };
    let (mut to_left, mut to_right, mut to_on, mut above) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for part in owned_conjuncts(&predicate) {
        match (side(&part, left_width), kind) {
            (Side::Left, JoinKind::Inner | JoinKind::Left) => to_left.push(part),
            (Side::Right, JoinKind::Inner | JoinKind::Right) => {
                to_right.push(part.map_columns(&|i| i - left_width))
            }
            (Side::Both, JoinKind::Inner) => to_on.push(part),
            _ => above.push(part),
        }
    }
    let condition: Vec<Expr> = keys
        .into_iter()
        .map(|key| key_condition(key, left_width))
        .chain(on.iter().flat_map(owned_conjuncts))
        .chain(to_on)
        .collect();
    derive_constants(&condition, kind, left_width, (&mut to_left, &mut to_right));
    let joined = join(
        push(*left, to_left, stats),
        push(*right, to_right, stats),
        kind,
        and_all(condition),
        (left_width, right_width),
        stats,
    );
    match and_all(above) {
        Some(predicate) => Plan::Filter {
            input: Box::new(joined),
            predicate,
        },
        None => joined,
    }
}

/// For each conjunct `c = constant` going into one side and each equality `c = d` of the join's
/// condition with `d` a column of the other side, `d = constant` goes into the other side too —
/// where the join allows a filter there (the side no row of which it keeps unmatched): its rows
/// with another value could match no row anyway. So `c JOIN o ON o.customer = c.id WHERE c.id = 5`
/// reads only customer 5's orders.
fn derive_constants(
    condition: &[Expr],
    kind: JoinKind,
    left_width: usize,
    (to_left, to_right): (&mut Vec<Expr>, &mut Vec<Expr>),
) {
    let pairs: Vec<(usize, usize)> = condition
        .iter()
        .filter_map(|part| match part {
            Expr::Compare(CmpOp::Eq, a, b) => match (&**a, &**b) {
                (Expr::Column(l), Expr::Column(r)) if *l < left_width && *r >= left_width => {
                    Some((*l, *r - left_width))
                }
                (Expr::Column(r), Expr::Column(l)) if *l < left_width && *r >= left_width => {
                    Some((*l, *r - left_width))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    if pairs.is_empty() {
        return;
    }
    let into_right = matches!(kind, JoinKind::Inner | JoinKind::Left);
    let into_left = matches!(kind, JoinKind::Inner | JoinKind::Right);
    let derived_right: Vec<Expr> = match into_right {
        true => derived(to_left, pairs.iter().copied()),
        false => Vec::new(),
    };
    let derived_left: Vec<Expr> = match into_left {
        true => derived(to_right, pairs.iter().map(|&(l, r)| (r, l))),
        false => Vec::new(),
    };
    to_right.extend(derived_right);
    to_left.extend(derived_left);
}

/// `d = constant` for each `c = constant` among `parts` and each pair `(c, d)`.
fn derived(parts: &[Expr], pairs: impl Iterator<Item = (usize, usize)> + Clone) -> Vec<Expr> {
    let mut out = Vec::new();
    for part in parts {
        let Some((column, value)) = column_equals_constant(part) else {
            continue;
        };
        for (from, to) in pairs.clone() {
            if from == column {
                let eq = Expr::Compare(
                    CmpOp::Eq,
                    Box::new(Expr::Column(to)),
                    Box::new(value.clone()),
                );
                out.push(eq);
            }
        }
    }
    out
}

/// `(column, value)` if `part` is `column = value` (either way round) with a value that reads no
/// column and is the same for every row.
fn column_equals_constant(part: &Expr) -> Option<(usize, &Expr)> {
    let Expr::Compare(CmpOp::Eq, a, b) = part else {
        return None;
    };
    let constant = |e: &Expr| {
        let mut constant = true;
        e.visit(&mut |x| match x {
            Expr::Column(_) | Expr::Subquery(_) | Expr::AggRef(_) => constant = false,
            Expr::Call(function, _) if function.volatile => constant = false,
            _ => {}
        });
        constant
    };
    match (&**a, &**b) {
        (Expr::Column(c), value) | (value, Expr::Column(c)) if constant(value) => Some((*c, value)),
        _ => None,
    }
}

/// `plan` filtered by the conjunction of `parts` (unchanged if there are none).
fn push(plan: Plan, parts: Vec<Expr>, stats: &Statistics) -> Plan {
    match and_all(parts) {
        Some(predicate) => access::filter(plan, predicate, stats),
        None => plan,
    }
}

/// A hash key if `part` is `l = r` with `l` reading the left side only and `r` the right side
/// only (or the other way round); otherwise `part` itself.
fn key_of(part: Expr, left_width: usize) -> Result<JoinKey, Expr> {
    let Expr::Compare(CmpOp::Eq, a, b) = part else {
        return Err(part);
    };
    let to_right = |e: Expr| e.map_columns(&|i| i - left_width);
    match (side(&a, left_width), side(&b, left_width)) {
        (Side::Left, Side::Right) => Ok(JoinKey {
            left: *a,
            right: to_right(*b),
        }),
        (Side::Right, Side::Left) => Ok(JoinKey {
            left: *b,
            right: to_right(*a),
        }),
        _ => Err(Expr::Compare(CmpOp::Eq, a, b)),
    }
}

/// The equality a hash key stands for, over the joined row.
fn key_condition(key: JoinKey, left_width: usize) -> Expr {
    Expr::Compare(
        CmpOp::Eq,
        Box::new(key.left),
        Box::new(key.right.shifted(left_width)),
    )
}

fn owned_conjuncts(predicate: &Expr) -> Vec<Expr> {
    let mut parts = Vec::new();
    conjuncts(predicate, &mut parts);
    parts.into_iter().cloned().collect()
}

/// The conjunction of `parts`, or None when there are none.
pub fn and_all(parts: impl IntoIterator<Item = Expr>) -> Option<Expr> {
    parts
        .into_iter()
        .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
}

/// Rows assumed for a table without statistics, and for a table function.
const UNKNOWN_ROWS: f64 = 1000.0;
/// The fraction of rows a condition the estimate cannot read keeps.
const UNKNOWN_SELECTIVITY: f64 = 0.33;
/// The most inputs a tree of inner joins may have to be reordered (one bit each in a `u64`).
const MAX_REORDERED: usize = 64;

/// One input of a tree of inner joins: its plan, and where its columns start and how many there
/// are in the row of the tree as written.
struct Leaf {
    plan: Plan,
    start: usize,
    width: usize,
    rows: f64,
}

/// Orders every tree of inner joins in `plan` (those under outer joins, filters and projections
/// included) by estimated size: the largest input first, as the side that streams, then at each
/// step the smallest input joined to what is already there by some condition (only when none is,
/// the smallest input of all — a cross product no order avoids), each as the hashed side. The
/// conditions are placed again at the lowest join where every input they read is present, and a
/// projection restores the written column order. A tree whose conditions hold a subquery (which
/// reads its node's row through outer references) keeps its written order.
pub fn reorder(plan: Plan, stats: &Statistics) -> Plan {
    match plan {
        Plan::Join {
            kind: JoinKind::Inner,
            ..
        } if reorderable(&plan).is_some_and(|inputs| inputs <= MAX_REORDERED) => {
            reorder_inner(plan, stats)
        }
        Plan::Join {
            left,
            right,
            kind,
            keys,
            on,
            left_width,
            right_width,
        } => Plan::Join {
            left: Box::new(reorder(*left, stats)),
            right: Box::new(reorder(*right, stats)),
            kind,
            keys,
            on,
            left_width,
            right_width,
        },
        Plan::Filter { input, predicate } => Plan::Filter {
            input: Box::new(reorder(*input, stats)),
            predicate,
        },
        Plan::Project { input, exprs } => Plan::Project {
            input: Box::new(reorder(*input, stats)),
            exprs,
        },
        other => other,
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
        } => {
            let mut plain = true;
            on.iter().for_each(|on| {
                on.visit(&mut |e| plain &= !matches!(e, Expr::Subquery(_) | Expr::AggRef(_)))
            });
            match plain {
                true => Some(reorderable(left)? + reorderable(right)?),
                false => None,
            }
        }
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
    let (mut leaves, mut conditions) = (Vec::new(), Vec::new());
    flatten(plan, (0, width), &mut leaves, &mut conditions, stats);
    let order = greedy_order(&leaves, &conditions);
    // Where each written column sits in the new order.
    let mut position = vec![0; width];
    let mut next = 0;
    for &at in &order {
        let leaf = &leaves[at];
        for (offset, slot) in position[leaf.start..leaf.start + leaf.width]
            .iter_mut()
            .enumerate()
        {
            *slot = next + offset;
        }
        next += leaf.width;
    }
    let in_order = order.windows(2).all(|w| w[0] < w[1]);
    let conditions: Vec<(u64, Expr)> = conditions
        .into_iter()
        .map(|c| (reads(&c, &leaves), c.map_columns(&|i| position[i])))
        .collect();
    let joined = join_in_order(leaves, &order, conditions, stats);
    match in_order {
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
            flatten(
                *right,
                (start + left_width, right_width),
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
            let plan = reorder(other, stats);
            leaves.push(Leaf {
                plan,
                start,
                width,
                rows,
            });
        }
    }
}

/// The inputs a condition reads, as bits by leaf number.
fn reads(condition: &Expr, leaves: &[Leaf]) -> u64 {
    let mut bits = 0u64;
    condition.visit(&mut |e| {
        if let Expr::Column(i) = e {
            if let Some(at) = leaves
                .iter()
                .position(|l| (l.start..l.start + l.width).contains(i))
            {
                bits |= 1 << at;
            }
        }
    });
    bits
}

/// The join order of the module doc: the largest input first, then the smallest connected one.
fn greedy_order(leaves: &[Leaf], conditions: &[Expr]) -> Vec<usize> {
    let masks: Vec<u64> = conditions.iter().map(|c| reads(c, leaves)).collect();
    let count = leaves.len();
    let by_rows = |a: &usize, b: &usize| leaves[*a].rows.total_cmp(&leaves[*b].rows);
    let Some(first) = (0..count).rev().max_by(by_rows) else {
        return Vec::new();
    };
    let mut order = vec![first];
    let mut present = 1u64 << first;
    while order.len() < count {
        let absent = (0..count).filter(|at| present & (1 << at) == 0);
        let connected = |at: &usize| {
            masks
                .iter()
                .any(|&m| m & (1 << at) != 0 && m & present != 0 && m & !(present | 1 << at) == 0)
        };
        let next = absent
            .clone()
            .filter(connected)
            .min_by(by_rows)
            .or_else(|| absent.min_by(by_rows));
        let Some(next) = next else { break };
        order.push(next);
        present |= 1 << next;
    }
    order
}

/// A left-deep tree of the leaves in `order`, each condition at the first join where every
/// input it reads is present (one reading none at the last).
fn join_in_order(
    leaves: Vec<Leaf>,
    order: &[usize],
    mut conditions: Vec<(u64, Expr)>,
    stats: &Statistics,
) -> Plan {
    let mut slots: Vec<Option<Leaf>> = leaves.into_iter().map(Some).collect();
    let mut take = |at: usize| slots[at].take();
    let Some(first) = order.first().and_then(|&at| take(at)) else {
        return Plan::single_row();
    };
    let (mut plan, mut width) = (first.plan, first.width);
    let mut present = 1u64 << order[0];
    for (step, &at) in order.iter().enumerate().skip(1) {
        let Some(leaf) = take(at) else { continue };
        present |= 1 << at;
        let last = step + 1 == order.len();
        let (here, later): (Vec<_>, Vec<_>) = conditions
            .into_iter()
            .partition(|(mask, _)| *mask & !present == 0 && (*mask != 0 || last));
        conditions = later;
        let on = and_all(here.into_iter().map(|(_, c)| c));
        plan = join(
            plan,
            leaf.plan,
            JoinKind::Inner,
            on,
            (width, leaf.width),
            stats,
        );
        width += leaf.width;
    }
    match and_all(conditions.into_iter().map(|(_, c)| c)) {
        Some(predicate) => Plan::Filter {
            input: Box::new(plan),
            predicate,
        },
        None => plan,
    }
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
            let range = match access {
                Access::Full => 1.0,
                Access::Primary(range) | Access::Index(_, range) => {
                    let key = match access {
                        Access::Index(index, _) => &index.columns,
                        _ => &table.primary_key,
                    };
                    let equal: f64 = key[..range.equal.len().min(key.len())]
                        .iter()
                        .map(|&c| stats.equality(table.id, c))
                        .product();
                    let bounded = range.lower.is_some() || range.upper.is_some();
                    equal * if bounded { UNKNOWN_SELECTIVITY } else { 1.0 }
                }
            };
            let filtered = filter
                .as_ref()
                .map_or(1.0, |f| filter_selectivity(f, table.id, stats));
            (rows * range * filtered).max(1.0)
        }
        Plan::Values { rows, .. } => rows.len() as f64,
        Plan::Filter { input, .. } => estimate_rows(input, stats) * UNKNOWN_SELECTIVITY,
        Plan::Project { input, .. } | Plan::Sort { input, .. } | Plan::Distinct { input } => {
            estimate_rows(input, stats)
        }
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
            ..
        } => {
            let (l, r) = (estimate_rows(left, stats), estimate_rows(right, stats));
            match (keys.is_empty(), on.is_some()) {
                (false, _) => l.max(r),
                (true, true) => l * r * UNKNOWN_SELECTIVITY,
                (true, false) => l * r,
            }
        }
        Plan::Lateral { left, .. } => estimate_rows(left, stats),
        Plan::SetOp { left, right, .. } => estimate_rows(left, stats) + estimate_rows(right, stats),
        Plan::System(_) | Plan::Series { .. } => UNKNOWN_ROWS,
        Plan::Insert(_) | Plan::Update(_) | Plan::Delete(_) => UNKNOWN_ROWS,
    }
}

/// The fraction of a table's rows `filter` keeps: each `column = value` conjunct by the
/// column's statistics, any other conjunct by [`UNKNOWN_SELECTIVITY`].
fn filter_selectivity(
    filter: &Expr,
    table: steady_engine::version::IndexId,
    stats: &Statistics,
) -> f64 {
    let mut parts = Vec::new();
    conjuncts(filter, &mut parts);
    parts
        .into_iter()
        .map(|part| match column_equals_constant(part) {
            Some((column, _)) => stats.equality(table, column),
            None => UNKNOWN_SELECTIVITY,
        })
        .product()
}
