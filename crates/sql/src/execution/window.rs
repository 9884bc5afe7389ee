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
//! - `GROUPS` counts peer groups: `n PRECEDING` starts at the first row of the group n groups
//!   before the current row's.
//! - `RANGE` (the default, `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`) reads the ORDER
//!   BY value: `CURRENT ROW` is the current row's first or last peer, and `x PRECEDING` /
//!   `x FOLLOWING` (one ORDER BY key, of a number type with a number offset or a date/time type
//!   with an interval) reach the rows whose value lies within x of the current row's, found by
//!   binary search in the sorted partition. A row whose value is NULL has its peers (the other
//!   NULLs) as such a frame's edge, and no NULL row lies within x of a value.
//!
//! An aggregate whose frame starts at the partition's start is folded incrementally (each row's
//! frame end only moves forward); any other frame is folded afresh per row.

use steady_types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::aggregate::{compare_by_keys, compare_rows, AggCall};
use crate::execution::expr::Expr;
use crate::execution::plan::SortKey;
use crate::types::ops::{self, ArithOp};

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

/// What a frame's offsets count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameUnits {
    Rows,
    Range,
    Groups,
}

/// A window frame: `ROWS`, `RANGE` or `GROUPS` between two bounds.
#[derive(Debug, Clone)]
pub struct Frame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
}

impl Default for Frame {
    /// `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`.
    fn default() -> Self {
        Frame {
            units: FrameUnits::Range,
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

/// A frame's offsets, evaluated once per call (None for a bound without one).
#[derive(Debug, Clone, Default)]
pub struct Offsets {
    pub start: Option<Value>,
    pub end: Option<Value>,
}

impl Offsets {
    /// The offsets of `frame` as its units take them: non-negative integers for ROWS and
    /// GROUPS, any non-negative value of the offset's type for RANGE.
    pub fn check(frame: &Frame, start: Option<Value>, end: Option<Value>) -> Result<Offsets> {
        for (offset, which) in [(&start, "starting"), (&end, "ending")] {
            match (offset, frame.units) {
                (None, _) => {}
                (Some(Value::Null), _) => drop(frame_offset(&Value::Null, which)?),
                (Some(value), FrameUnits::Range) => range_offset(value)?,
                (Some(value), _) => drop(frame_offset(value, which)?),
            }
        }
        Ok(Offsets { start, end })
    }

    fn count(offset: &Option<Value>) -> usize {
        offset
            .as_ref()
            .and_then(|v| frame_offset(v, "").ok())
            .unwrap_or(0)
    }
}

/// A RANGE offset: not negative (22013, PostgreSQL's words).
fn range_offset(value: &Value) -> Result<()> {
    let negative = match value {
        Value::Interval(i) => i.months < 0 || i.days < 0 || i.micros < 0,
        other => other
            .compare(&Value::Integer(0))
            .is_some_and(std::cmp::Ordering::is_lt),
    };
    if negative {
        return Err(SqlError::new(
            "22013",
            "invalid preceding or following size in window function",
        ));
    }
    Ok(())
}

/// One partition (sorted) as a frame reads it: its rows' peers and ORDER BY, and where the rows
/// whose first ORDER BY value is not NULL lie (one run, before or after the NULLs).
pub struct FrameSource<'p> {
    partition: &'p [Placed],
    order: &'p [SortKey],
    peers: &'p [(usize, usize)],
    with_values: std::ops::Range<usize>,
}

impl<'p> FrameSource<'p> {
    pub fn new(partition: &'p [Placed], order: &'p [SortKey], peers: &'p [(usize, usize)]) -> Self {
        let len = partition.len();
        let nulls = match order.first() {
            Some(_) => partition.iter().filter(|p| p.order[0].is_null()).count(),
            None => 0,
        };
        let with_values = match order.first() {
            Some(key) if key.nulls_first => nulls..len,
            _ => 0..len - nulls,
        };
        FrameSource {
            partition,
            order,
            peers,
            with_values,
        }
    }
}

/// The frame of every position of a partition: positions, inclusive, empty when start > end.
pub fn frames(
    frame: &Frame,
    offsets: &Offsets,
    source: &FrameSource,
) -> Result<Vec<(isize, isize)>> {
    let len = source.partition.len() as isize;
    let groups = peer_groups(source.peers);
    (0..source.partition.len())
        .map(|at| {
            let start = edge(
                frame,
                &frame.start,
                &offsets.start,
                at,
                true,
                source,
                &groups,
            )?;
            let end = edge(frame, &frame.end, &offsets.end, at, false, source, &groups)?;
            Ok((start.max(0), end.min(len - 1)))
        })
        .collect()
}

/// The peer groups of a partition as (first, last) positions, and each position's group.
fn peer_groups(peers: &[(usize, usize)]) -> (Vec<(usize, usize)>, Vec<usize>) {
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut group_of = Vec::with_capacity(peers.len());
    for (at, &peer) in peers.iter().enumerate() {
        if at == peer.0 {
            groups.push(peer);
        }
        group_of.push(groups.len() - 1);
    }
    (groups, group_of)
}

/// One edge of position `at`'s frame.
fn edge(
    frame: &Frame,
    bound: &FrameBound,
    offset: &Option<Value>,
    at: usize,
    is_start: bool,
    source: &FrameSource,
    (groups, group_of): &(Vec<(usize, usize)>, Vec<usize>),
) -> Result<isize> {
    let len = source.partition.len() as isize;
    let at_signed = at as isize;
    let peer = source.peers[at];
    let count = Offsets::count(offset) as isize;
    Ok(match (bound, frame.units) {
        (FrameBound::UnboundedPreceding, _) => {
            if is_start {
                0
            } else {
                -1
            }
        }
        (FrameBound::UnboundedFollowing, _) => {
            if is_start {
                len
            } else {
                len - 1
            }
        }
        (FrameBound::CurrentRow, FrameUnits::Rows) => at_signed,
        (FrameBound::CurrentRow, _) if is_start => peer.0 as isize,
        (FrameBound::CurrentRow, _) => peer.1 as isize,
        (FrameBound::Preceding(_), FrameUnits::Rows) => at_signed - count,
        (FrameBound::Following(_), FrameUnits::Rows) => at_signed.saturating_add(count),
        (FrameBound::Preceding(_) | FrameBound::Following(_), FrameUnits::Groups) => {
            let step = if matches!(bound, FrameBound::Preceding(_)) {
                -count
            } else {
                count
            };
            let group = group_of[at] as isize + step;
            match groups.get(usize::try_from(group).unwrap_or(usize::MAX)) {
                Some(&(first, last)) => (if is_start { first } else { last }) as isize,
                None if group < 0 => {
                    if is_start {
                        0
                    } else {
                        -1
                    }
                }
                None => {
                    if is_start {
                        len
                    } else {
                        len - 1
                    }
                }
            }
        }
        (FrameBound::Preceding(_) | FrameBound::Following(_), FrameUnits::Range) => {
            let preceding = matches!(bound, FrameBound::Preceding(_));
            let offset = offset.as_ref().unwrap_or(&Value::Null);
            range_edge(source, at, offset, preceding, is_start)?
        }
    })
}

/// The edge of a RANGE frame with an offset: the first (start) or last (end) position whose
/// ORDER BY value lies on the frame's side of the current value moved by `offset`.
fn range_edge(
    source: &FrameSource,
    at: usize,
    offset: &Value,
    preceding: bool,
    is_start: bool,
) -> Result<isize> {
    let key = &source.order[0];
    let value_at = |p: usize| &source.partition[p].order[0];
    let current = value_at(at);
    if current.is_null() {
        let peer = source.peers[at];
        return Ok((if is_start { peer.0 } else { peer.1 }) as isize);
    }
    let run = source.with_values.clone();
    // Moving back in the sort order subtracts on an ascending key and adds on a descending one.
    let subtract = preceding != key.descending;
    let op = if subtract { ArithOp::Sub } else { ArithOp::Add };
    let target = match ops::arith(op, current, offset) {
        Ok(target) => Some(target),
        Err(err) if err.code == "22008" || err.code == "22003" => None,
        Err(err) => return Err(err),
    };
    // Where a row lies against the target in the sort order (a descending key reverses the
    // values' order); an overflowed target lies beyond every row on its side.
    let placed = |p: usize| -> std::cmp::Ordering {
        match &target {
            None if subtract => std::cmp::Ordering::Greater,
            None => std::cmp::Ordering::Less,
            Some(target) => {
                let ordering = compare_across(value_at(p), target);
                if key.descending {
                    ordering.reverse()
                } else {
                    ordering
                }
            }
        }
    };
    let before = |p: usize| placed(p).is_lt();
    let not_after = |p: usize| placed(p).is_le();
    Ok(if is_start {
        partition_point(run, before) as isize
    } else {
        partition_point(run, not_after) as isize - 1
    })
}

/// The first position of `run` where `holds` stops holding (it holds on a prefix of `run`).
fn partition_point(run: std::ops::Range<usize>, holds: impl Fn(usize) -> bool) -> usize {
    let (mut low, mut high) = (run.start, run.end);
    while low < high {
        let middle = low + (high - low) / 2;
        if holds(middle) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

/// Compares an ORDER BY value with a RANGE target of a wider type (a date with the timestamp
/// `date - interval` gives).
fn compare_across(value: &Value, target: &Value) -> std::cmp::Ordering {
    let widened = match (value.data_type(), target.data_type()) {
        (Some(from), Some(to)) if from != to => value.cast_to(&to).ok(),
        _ => None,
    };
    widened
        .as_ref()
        .unwrap_or(value)
        .compare(target)
        .unwrap_or(std::cmp::Ordering::Equal)
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

    fn placed(values: &[Option<i32>]) -> Vec<Placed> {
        values
            .iter()
            .enumerate()
            .map(|(row, v)| Placed {
                partition: Vec::new(),
                order: vec![v.map_or(Value::Null, Value::Integer)],
                row,
            })
            .collect()
    }

    fn frames_over(frame: &Frame, offsets: Offsets, values: &[Option<i32>]) -> Vec<(isize, isize)> {
        let partition = placed(values);
        let order = vec![SortKey {
            expr: Expr::Column(0),
            descending: false,
            nulls_first: false,
        }];
        let peers = peers(&partition, &order);
        let source = FrameSource::new(&partition, &order, &peers);
        super::frames(frame, &offsets, &source).unwrap()
    }

    fn between(units: FrameUnits, start: FrameBound, end: FrameBound) -> Frame {
        Frame { units, start, end }
    }

    fn one() -> Expr {
        Expr::Literal(Value::Integer(1))
    }

    #[test]
    fn rows_frames_clamp_to_the_partition_and_range_frames_follow_peers() {
        let values = [Some(1), Some(1), Some(2), Some(3)];
        assert_eq!(
            frames_over(&Frame::default(), Offsets::default(), &values)[0],
            (0, 1)
        );
        let rows = between(
            FrameUnits::Rows,
            FrameBound::Preceding(one()),
            FrameBound::Following(Expr::Literal(Value::Integer(5))),
        );
        let offsets = Offsets {
            start: Some(Value::Integer(1)),
            end: Some(Value::Integer(5)),
        };
        let found = frames_over(&rows, offsets, &values);
        assert_eq!((found[0], found[3]), ((0, 3), (2, 3)));
        let empty = between(
            FrameUnits::Rows,
            FrameBound::Following(one()),
            FrameBound::Following(one()),
        );
        let offsets = Offsets {
            start: Some(Value::Integer(1)),
            end: Some(Value::Integer(1)),
        };
        let (start, end) = frames_over(&empty, offsets, &values)[3];
        assert!(start > end, "past the partition's end the frame is empty");
    }

    #[test]
    fn range_offsets_reach_values_within_the_offset_and_groups_count_peer_groups() {
        let values = [Some(1), Some(2), Some(2), Some(4), Some(7), None];
        let offsets = Offsets {
            start: Some(Value::Integer(1)),
            end: Some(Value::Integer(1)),
        };
        let range = between(
            FrameUnits::Range,
            FrameBound::Preceding(one()),
            FrameBound::Following(one()),
        );
        let found = frames_over(&range, offsets.clone(), &values);
        assert_eq!(found, vec![(0, 2), (0, 2), (0, 2), (3, 3), (4, 4), (5, 5)]);
        let groups = between(
            FrameUnits::Groups,
            FrameBound::Preceding(one()),
            FrameBound::Following(one()),
        );
        let found = frames_over(&groups, offsets, &values);
        assert_eq!(found, vec![(0, 2), (0, 3), (0, 3), (1, 4), (3, 5), (4, 5)]);
    }
}
