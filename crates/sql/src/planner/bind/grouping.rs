//! GROUP BY with grouping sets: ROLLUP, CUBE and GROUPING SETS expand into the sets PostgreSQL
//! groups by — a plain item is in every set, and several items combine as a cross product
//! (`GROUP BY a, ROLLUP (b, c)` is `(a, b, c), (a, b), (a)`) — and the aggregation then groups
//! the input once per set, the expressions a set leaves out reading NULL in its rows
//! (`executor::aggregate`). `GROUPING(…)` tells those NULLs apart from NULLs in the data.

use sqlparser::ast::Expr as AstExpr;

use crate::error::{Result, SqlError};
use crate::execution::aggregate::{AggCall, AggFunc};
use crate::execution::expr::Expr;

/// PostgreSQL's limit on the grouping sets of one query.
const MAX_GROUPING_SETS: usize = 4096;
/// PostgreSQL's limit on the elements of one CUBE (2^12 = 4096 sets).
const MAX_CUBE: usize = 12;

/// The grouping sets of GROUP BY `items`, each the expressions it groups by, in PostgreSQL's
/// order; None when no item is ROLLUP, CUBE or GROUPING SETS (a plain GROUP BY).
pub(super) fn expand(items: &[AstExpr]) -> Result<Option<Vec<Vec<&AstExpr>>>> {
    if !items.iter().any(is_set_item) {
        return Ok(None);
    }
    let mut sets: Vec<Vec<&AstExpr>> = vec![Vec::new()];
    for item in items {
        let choices = item_sets(item)?;
        if sets.len().saturating_mul(choices.len()) > MAX_GROUPING_SETS {
            return Err(too_many());
        }
        sets = sets
            .iter()
            .flat_map(|set| {
                choices
                    .iter()
                    .map(move |choice| set.iter().chain(choice).copied().collect())
            })
            .collect();
    }
    Ok(Some(sets))
}

fn is_set_item(item: &AstExpr) -> bool {
    matches!(
        item,
        AstExpr::Rollup(_) | AstExpr::Cube(_) | AstExpr::GroupingSets(_)
    )
}

/// The sets one GROUP BY item stands for.
fn item_sets(item: &AstExpr) -> Result<Vec<Vec<&AstExpr>>> {
    let lists = match item {
        AstExpr::Rollup(lists) | AstExpr::Cube(lists) | AstExpr::GroupingSets(lists) => lists,
        plain => return Ok(vec![vec![plain]]),
    };
    if lists.iter().flatten().any(is_set_item) {
        return Err(SqlError::unsupported(
            "ROLLUP, CUBE or GROUPING SETS nested in another",
        ));
    }
    Ok(match item {
        // (a, b), (a), ()
        AstExpr::Rollup(_) => (0..=lists.len())
            .rev()
            .map(|n| flat(lists[..n].iter()))
            .collect(),
        // (a, b), (a), (b), ()
        AstExpr::Cube(_) => {
            if lists.len() > MAX_CUBE {
                return Err(SqlError::new(
                    "54011",
                    format!("CUBE is limited to {MAX_CUBE} elements"),
                ));
            }
            let n = lists.len();
            (0..1usize << n)
                .rev()
                .map(|mask| {
                    let chosen = (0..n).filter(|i| mask & (1 << (n - 1 - i)) != 0);
                    flat(chosen.map(|i| &lists[i]))
                })
                .collect()
        }
        _ => lists.iter().map(|list| list.iter().collect()).collect(),
    })
}

/// The expressions of several lists, in order.
fn flat<'a>(lists: impl Iterator<Item = &'a Vec<AstExpr>>) -> Vec<&'a AstExpr> {
    lists.flatten().collect()
}

fn too_many() -> SqlError {
    SqlError::new(
        "54001",
        format!("too many grouping sets present (maximum {MAX_GROUPING_SETS})"),
    )
}

/// Checks that every argument of every `GROUPING(…)` among `aggregates` is one of `groups`.
pub(super) fn check_grouping_calls(aggregates: &[AggCall], groups: &[Expr]) -> Result<()> {
    let misplaced = aggregates
        .iter()
        .filter(|call| call.func == AggFunc::Grouping)
        .flat_map(|call| &call.args)
        .any(|arg| !groups.contains(arg));
    if misplaced {
        return Err(SqlError::new(
            "42803",
            "arguments to GROUPING must be grouping expressions of the associated query level",
        ));
    }
    Ok(())
}
