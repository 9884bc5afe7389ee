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
use crate::execution::plan::{JoinKey, JoinKind, Plan};
use crate::planner::access::{self, conjuncts};
use crate::planner::stats::Statistics;
use crate::types::ops::CmpOp;

mod method;
mod order;

pub use method::join_methods;
pub use order::{estimate_rows, reorder};

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
    let (mut left, mut right) = (false, false);
    expr.visit(&mut |e| match e {
        Expr::Column(i) if *i < left_width => left = true,
        Expr::Column(_) => right = true,
        _ => {}
    });
    match (!expr.is_movable(), left, right) {
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
            (Side::Right, JoinKind::Inner | JoinKind::Left | JoinKind::Anti) => {
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
            (Side::Left, JoinKind::Inner | JoinKind::Left | JoinKind::Anti) => to_left.push(part),
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
    let kind = match kind {
        JoinKind::Left => anti_join(&mut above, &condition, &right, left_width),
        other => other,
    };
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
    let into_right = matches!(kind, JoinKind::Inner | JoinKind::Left | JoinKind::Anti);
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
    let constant = |e: &Expr| e.is_movable() && !e.uses_columns();
    match (&**a, &**b) {
        (Expr::Column(c), value) | (value, Expr::Column(c)) if constant(value) => Some((*c, value)),
        _ => None,
    }
}

/// `Anti` if a conjunct above a LEFT join is `c IS NULL` for a right-side column `c` that is
/// never NULL in a matched row — one an equality of the condition compares with the left side,
/// or a NOT NULL column of the right table — so the conjunct keeps exactly the left rows
/// nothing matched (PostgreSQL's reduction to an anti join); that conjunct is then dropped.
fn anti_join(
    above: &mut Vec<Expr>,
    condition: &[Expr],
    right: &Plan,
    left_width: usize,
) -> JoinKind {
    let compared = |c: usize| {
        condition.iter().any(|part| match part {
            Expr::Compare(CmpOp::Eq, a, b) => {
                let (a, b) = (&**a, &**b);
                (matches!(a, Expr::Column(i) if *i == c) && side(b, left_width) == Side::Left)
                    || (matches!(b, Expr::Column(i) if *i == c)
                        && side(a, left_width) == Side::Left)
            }
            _ => false,
        })
    };
    let not_null = |c: usize| match right {
        Plan::Scan { table, .. } => table
            .columns
            .get(c - left_width)
            .is_some_and(|column| !column.nullable),
        _ => false,
    };
    let test = above.iter().position(|part| match part {
        Expr::IsNull(e) => {
            matches!(**e, Expr::Column(c) if c >= left_width && (compared(c) || not_null(c)))
        }
        _ => false,
    });
    match test {
        Some(at) => {
            above.remove(at);
            JoinKind::Anti
        }
        None => JoinKind::Left,
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

/// `plan` with `f` applied to the inputs of a join, filter or projection at its top (the nodes
/// the join passes walk through); any other node unchanged.
fn map_inputs(plan: Plan, f: &mut dyn FnMut(Plan) -> Plan) -> Plan {
    match plan {
        Plan::Join {
            left,
            right,
            kind,
            keys,
            on,
            left_width,
            right_width,
        } => Plan::Join {
            left: Box::new(f(*left)),
            right: Box::new(f(*right)),
            kind,
            keys,
            on,
            left_width,
            right_width,
        },
        Plan::Filter { input, predicate } => Plan::Filter {
            input: Box::new(f(*input)),
            predicate,
        },
        Plan::Project { input, exprs } => Plan::Project {
            input: Box::new(f(*input)),
            exprs,
        },
        other => other,
    }
}

/// The conjunction of `parts`, or None when there are none.
pub fn and_all(parts: impl IntoIterator<Item = Expr>) -> Option<Expr> {
    parts
        .into_iter()
        .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
}
