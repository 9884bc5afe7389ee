//! Window functions: `f(...) OVER (PARTITION BY ... ORDER BY ... frame)` — the calls a
//! [`crate::execution::plan::Plan::Window`] node computes, and their evaluation.
//!
//! The node reads all its input, then for each call sorts the rows by (partition, order) — a
//! stable sort from the previous call's order, so calls with the same window share it — walks
//! each partition, and gives every row the call's value; rows go out in the last call's order, as
//! PostgreSQL's do. Within a partition, *peers* are rows equal under the ORDER BY (all rows are
//! peers without one). Ranking functions read positions and peers; `lag`/`lead` read the row at
//! an offset; `first_value`, `last_value`, `nth_value` and aggregates read the row's *frame*:
//!
//! - `ROWS` counts rows: `n PRECEDING` is n rows before the current one.
//! - `RANGE` (the default, `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`) counts peers:
//!   `CURRENT ROW` is the current row's first or last peer. `RANGE` with an offset is refused.
//!
//! An aggregate whose frame starts at the partition's start is folded incrementally (each row's
//! frame end only moves forward); any other frame is folded afresh per row.

use steady_types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::aggregate::{compare_by_keys, compare_rows, AggCall};
use crate::execution::expr::Expr;
use crate::execution::plan::SortKey;

/// What a window call computes.
#[derive(Debug, Clone)]
pub enum WindowFunc {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    Ntile,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    NthValue,
    /// An aggregate over the frame (its arguments and FILTER are in the call).
    Aggregate(AggCall),
}

impl WindowFunc {
    /// The window-only function called `name`, if it is one.
    pub fn by_name(name: &str) -> Option<WindowFunc> {
        Some(match name {
            "row_number" => WindowFunc::RowNumber,
            "rank" => WindowFunc::Rank,
            "dense_rank" => WindowFunc::DenseRank,
            "percent_rank" => WindowFunc::PercentRank,
            "cume_dist" => WindowFunc::CumeDist,
            "ntile" => WindowFunc::Ntile,
            "lag" => WindowFunc::Lag,
            "lead" => WindowFunc::Lead,
            "first_value" => WindowFunc::FirstValue,
            "last_value" => WindowFunc::LastValue,
            "nth_value" => WindowFunc::NthValue,
            _ => return None,
        })
    }

    /// How many arguments it takes (lowest, highest).
    pub fn arity(&self) -> (usize, usize) {
        match self {
            WindowFunc::Ntile | WindowFunc::FirstValue | WindowFunc::LastValue => (1, 1),
            WindowFunc::Lag | WindowFunc::Lead => (1, 3),
            WindowFunc::NthValue => (2, 2),
            WindowFunc::Aggregate(_) => (0, 2),
            _ => (0, 0),
        }
    }

    /// The result type, given the first argument's.
    pub fn result_type(&self, first: Option<DataType>) -> Option<DataType> {
        match self {
            WindowFunc::RowNumber | WindowFunc::Rank | WindowFunc::DenseRank => {
                Some(DataType::BigInt)
            }
            WindowFunc::Ntile => Some(DataType::Integer),
            WindowFunc::PercentRank | WindowFunc::CumeDist => Some(DataType::Double),
            WindowFunc::Aggregate(call) => call.ty,
            _ => first,
        }
    }
}

/// One edge of a window frame. Offsets are constant expressions (no column), checked when the
/// node runs.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(Expr),
    CurrentRow,
    Following(Expr),
    UnboundedFollowing,
}

/// A window frame: `ROWS` or `RANGE` (peers) between two bounds.
#[derive(Debug, Clone)]
pub struct Frame {
    pub rows: bool,
    pub start: FrameBound,
    pub end: FrameBound,
}

impl Default for Frame {
    /// `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`.
    fn default() -> Self {
        Frame {
            rows: false,
            start: FrameBound::UnboundedPreceding,
            end: FrameBound::CurrentRow,
        }
    }
}

/// One window function call: `func(args) OVER (PARTITION BY partition ORDER BY order frame)`.
#[derive(Debug, Clone)]
pub struct WindowCall {
    pub func: WindowFunc,
    pub args: Vec<Expr>,
    pub partition: Vec<Expr>,
    pub order: Vec<SortKey>,
    pub frame: Frame,
}

/// A row's place for one call: its partition and ORDER BY values, and its index in the input.
pub struct Placed {
    pub partition: Vec<Value>,
    pub order: Vec<Value>,
    pub row: usize,
}

/// Sorts `placed` (stably) by partition, then by the call's ORDER BY.
pub fn sort_placed(placed: &mut [Placed], order: &[SortKey]) {
    placed.sort_by(|a, b| {
        compare_rows(&a.partition, &b.partition)
            .then_with(|| compare_by_keys(&a.order, &b.order, order))
    });
}

/// The ranges of `placed` (sorted) that are partitions.
pub fn partitions(placed: &[Placed]) -> Vec<std::ops::Range<usize>> {
    runs(placed.len(), |a, b| {
        compare_rows(&placed[a].partition, &placed[b].partition).is_eq()
    })
}

/// For each position of a partition, the first and last position of its peers.
pub fn peers(partition: &[Placed], order: &[SortKey]) -> Vec<(usize, usize)> {
    let mut found = vec![(0, 0); partition.len()];
    for run in runs(partition.len(), |a, b| {
        compare_by_keys(&partition[a].order, &partition[b].order, order).is_eq()
    }) {
        for at in run.clone() {
            found[at] = (run.start, run.end - 1);
        }
    }
    found
}

/// Maximal runs of `0..len` whose neighbours are `same`.
fn runs(len: usize, same: impl Fn(usize, usize) -> bool) -> Vec<std::ops::Range<usize>> {
    let mut found = Vec::new();
    let mut start = 0;
    for at in 1..=len {
        if at == len || !same(at - 1, at) {
            found.push(start..at);
            start = at;
        }
    }
    found
}

/// A frame's offsets, evaluated once per call.
#[derive(Debug, Clone, Copy, Default)]
pub struct Offsets {
    pub start: usize,
    pub end: usize,
}

/// The positions (inclusive, possibly empty when start > end) of position `at`'s frame in a
/// partition of `len` rows with the given peers.
pub fn frame_of(
    frame: &Frame,
    offsets: Offsets,
    at: usize,
    peers: &[(usize, usize)],
) -> (isize, isize) {
    let len = peers.len() as isize;
    let at_signed = at as isize;
    let edge = |bound: &FrameBound, offset: usize, is_start: bool| -> isize {
        match bound {
            FrameBound::UnboundedPreceding => {
                if is_start {
                    0
                } else {
                    -1
                }
            }
            FrameBound::Preceding(_) => at_signed - offset as isize,
            FrameBound::CurrentRow if frame.rows => at_signed,
            FrameBound::CurrentRow if is_start => peers[at].0 as isize,
            FrameBound::CurrentRow => peers[at].1 as isize,
            FrameBound::Following(_) => at_signed.saturating_add(offset as isize),
            FrameBound::UnboundedFollowing => {
                if is_start {
                    len
                } else {
                    len - 1
                }
            }
        }
    };
    let start = edge(&frame.start, offsets.start, true).max(0);
    let end = edge(&frame.end, offsets.end, false).min(len - 1);
    (start, end)
}

/// A frame offset's value: a non-negative integer.
pub fn frame_offset(value: &Value, which: &str) -> Result<usize> {
    let number = match value {
        Value::Null => {
            return Err(SqlError::new(
                "22004",
                format!("frame {which} offset must not be null"),
            ))
        }
        Value::SmallInt(v) => i64::from(*v),
        Value::Integer(v) => i64::from(*v),
        Value::BigInt(v) => *v,
        other => {
            return Err(SqlError::new(
                "22P02",
                format!("frame {which} offset must be an integer, not {other}"),
            ))
        }
    };
    usize::try_from(number).map_err(|_| {
        SqlError::new(
            "22013",
            format!("frame {which} offset must not be negative"),
        )
    })
}

/// `ntile(buckets)`'s bucket (1-based) for position `at` of a partition of `len` rows: the first
/// `len % buckets` buckets hold one row more, as in PostgreSQL.
pub fn ntile_bucket(at: usize, len: usize, buckets: usize) -> usize {
    let per = len / buckets;
    let larger = len % buckets;
    let in_larger = larger * (per + 1);
    if at < in_larger {
        at / (per + 1) + 1
    } else {
        larger + (at - in_larger) / per.max(1) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ntile_spreads_the_remainder_over_the_first_buckets() {
        let buckets: Vec<usize> = (0..10).map(|at| ntile_bucket(at, 10, 3)).collect();
        assert_eq!(buckets, vec![1, 1, 1, 1, 2, 2, 2, 3, 3, 3]);
        let more_buckets_than_rows: Vec<usize> = (0..2).map(|at| ntile_bucket(at, 2, 5)).collect();
        assert_eq!(more_buckets_than_rows, vec![1, 2]);
    }

    #[test]
    fn frames_clamp_to_the_partition_and_follow_peers() {
        let peers = vec![(0, 1), (0, 1), (2, 2), (3, 3)];
        let range = Frame::default();
        assert_eq!(frame_of(&range, Offsets::default(), 0, &peers), (0, 1));
        let rows = Frame {
            rows: true,
            start: FrameBound::Preceding(Expr::Literal(Value::Integer(1))),
            end: FrameBound::Following(Expr::Literal(Value::Integer(5))),
        };
        let offsets = Offsets { start: 1, end: 5 };
        assert_eq!(frame_of(&rows, offsets, 0, &peers), (0, 3));
        assert_eq!(frame_of(&rows, offsets, 3, &peers), (2, 3));
        let empty = Frame {
            rows: true,
            start: FrameBound::Following(Expr::Literal(Value::Integer(1))),
            end: FrameBound::Following(Expr::Literal(Value::Integer(1))),
        };
        let (start, end) = frame_of(&empty, Offsets { start: 1, end: 1 }, 3, &peers);
        assert!(start > end, "past the partition's end the frame is empty");
    }
}
