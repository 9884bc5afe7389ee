//! The window node ([`Plan::Window`](crate::execution::plan::Plan::Window)): its input read
//! whole, each call computed per partition (see [`crate::execution::window`]), every row given
//! out with the calls' values after its own columns, in the last call's order.

use steady_types::Value;

use super::{accumulate, eval_each, BoxedSource, ExecCtx, Row};
use crate::error::{Result, SqlError};
use crate::execution::aggregate::{Accumulator, AggCall};
use crate::execution::window::{
    frames, ntile_bucket, partitions, peers, sort_placed, FrameBound, FrameSource, Offsets, Placed,
    WindowCall, WindowFunc,
};

/// Reads `input` and computes `calls` over it.
pub(super) fn window(
    input: &mut BoxedSource,
    calls: &[WindowCall],
    ctx: &mut ExecCtx,
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    while let Some(row) = input.next(ctx)? {
        ctx.check_interrupt()?;
        rows.push(row);
    }
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let mut values: Vec<Vec<Value>> = vec![Vec::with_capacity(calls.len()); rows.len()];
    for call in calls {
        let mut placed = Vec::with_capacity(rows.len());
        for &row in &order {
            placed.push(Placed {
                partition: eval_each(call.partition.iter(), &rows[row], ctx)?,
                order: eval_each(call.order.iter().map(|k| &k.expr), &rows[row], ctx)?,
                row,
            });
        }
        sort_placed(&mut placed, &call.order);
        let offsets = frame_offsets(call, ctx)?;
        for range in partitions(&placed) {
            let partition = &placed[range];
            let computed = compute(call, &offsets, partition, &rows, ctx)?;
            for (place, value) in partition.iter().zip(computed) {
                values[place.row].push(value);
            }
        }
        order = placed.iter().map(|p| p.row).collect();
    }
    let mut rows: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
    Ok(order
        .into_iter()
        .map(|at| {
            let mut row = rows[at].take().unwrap_or_default();
            row.append(&mut values[at]);
            row
        })
        .collect())
}

fn frame_offsets(call: &WindowCall, ctx: &mut ExecCtx) -> Result<Offsets> {
    let offset = |bound: &FrameBound, ctx: &mut ExecCtx| match bound {
        FrameBound::Preceding(e) | FrameBound::Following(e) => e.eval(&[], ctx).map(Some),
        _ => Ok(None),
    };
    let start = offset(&call.frame.start, ctx)?;
    let end = offset(&call.frame.end, ctx)?;
    Offsets::check(&call.frame, start, end)
}

/// The call's value for each row of one partition (sorted).
fn compute(
    call: &WindowCall,
    offsets: &Offsets,
    partition: &[Placed],
    rows: &[Row],
    ctx: &mut ExecCtx,
) -> Result<Vec<Value>> {
    let len = partition.len();
    let peers = peers(partition, &call.order);
    let row_at = |at: usize| &rows[partition[at].row];
    let mut values = Vec::with_capacity(len);
    match &call.func {
        WindowFunc::Aggregate(aggregate) => {
            return aggregate_over_frames(call, aggregate, offsets, partition, rows, &peers, ctx)
        }
        WindowFunc::RowNumber => values.extend((1..=len).map(|n| Value::BigInt(n as i64))),
        WindowFunc::Rank => values.extend(peers.iter().map(|p| Value::BigInt(p.0 as i64 + 1))),
        WindowFunc::DenseRank => {
            let mut rank = 0;
            for (at, p) in peers.iter().enumerate() {
                rank += i64::from(p.0 == at);
                values.push(Value::BigInt(rank));
            }
        }
        WindowFunc::PercentRank => values.extend(peers.iter().map(|p| {
            Value::Double(if len > 1 {
                p.0 as f64 / (len - 1) as f64
            } else {
                0.0
            })
        })),
        WindowFunc::CumeDist => values.extend(
            peers
                .iter()
                .map(|p| Value::Double((p.1 + 1) as f64 / len as f64)),
        ),
        WindowFunc::Ntile => {
            for at in 0..len {
                let buckets = call.args[0].eval(row_at(at), ctx)?;
                let buckets = positive(&buckets, "ntile")?;
                values.push(buckets.map_or(Value::Null, |b| {
                    Value::Integer(ntile_bucket(at, len, b) as i32)
                }));
            }
        }
        WindowFunc::Lag | WindowFunc::Lead => {
            let sign: isize = if matches!(call.func, WindowFunc::Lag) {
                -1
            } else {
                1
            };
            for at in 0..len {
                let offset = match call.args.get(1) {
                    Some(e) => match e.eval(row_at(at), ctx)? {
                        Value::Null => {
                            values.push(Value::Null);
                            continue;
                        }
                        v => integer(&v)?,
                    },
                    None => 1,
                };
                let target = (at as isize).checked_add(sign * offset as isize);
                values.push(match target.filter(|t| (0..len as isize).contains(t)) {
                    Some(t) => call.args[0].eval(row_at(t as usize), ctx)?,
                    None => match call.args.get(2) {
                        Some(default) => default.eval(row_at(at), ctx)?,
                        None => Value::Null,
                    },
                });
            }
        }
        WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue => {
            let source = FrameSource::new(partition, &call.order, &peers);
            let frames = frames(&call.frame, offsets, &source)?;
            for (at, &(start, end)) in frames.iter().enumerate() {
                let target = match call.func {
                    WindowFunc::FirstValue => Some(start),
                    WindowFunc::LastValue => Some(end),
                    _ => positive(&call.args[1].eval(row_at(at), ctx)?, "nth_value")?
                        .map(|n| start + n as isize - 1),
                };
                values.push(
                    match target.filter(|t| start <= end && (start..=end).contains(t)) {
                        Some(t) => call.args[0].eval(row_at(t as usize), ctx)?,
                        None => Value::Null,
                    },
                );
            }
        }
    }
    Ok(values)
}

/// An aggregate's value over each row's frame: folded incrementally when every frame starts at
/// the partition's start (frame ends only move forward), else afresh per row.
fn aggregate_over_frames(
    call: &WindowCall,
    aggregate: &AggCall,
    offsets: &Offsets,
    partition: &[Placed],
    rows: &[Row],
    peers: &[(usize, usize)],
    ctx: &mut ExecCtx,
) -> Result<Vec<Value>> {
    let calls = std::slice::from_ref(aggregate);
    let running = matches!(call.frame.start, FrameBound::UnboundedPreceding);
    let mut state = Accumulator::new(aggregate);
    let mut folded = 0;
    let mut values = Vec::with_capacity(partition.len());
    let source = FrameSource::new(partition, &call.order, peers);
    for (start, end) in frames(&call.frame, offsets, &source)? {
        if !running {
            state = Accumulator::new(aggregate);
            folded = start.max(0) as usize;
        }
        while (folded as isize) <= end {
            let row = &rows[partition[folded].row];
            accumulate(calls, std::slice::from_mut(&mut state), row, ctx)?;
            folded += 1;
        }
        values.push(state.clone().finish(aggregate)?);
    }
    Ok(values)
}

/// A positive integer argument (NULL stays NULL).
fn positive(value: &Value, function: &str) -> Result<Option<usize>> {
    if value.is_null() {
        return Ok(None);
    }
    let number = integer(value)?;
    if number <= 0 {
        return Err(SqlError::new(
            if function == "ntile" {
                "22014"
            } else {
                "22016"
            },
            format!("argument of {function} must be greater than zero"),
        ));
    }
    Ok(Some(number as usize))
}

fn integer(value: &Value) -> Result<i64> {
    match value {
        Value::SmallInt(v) => Ok(i64::from(*v)),
        Value::Integer(v) => Ok(i64::from(*v)),
        Value::BigInt(v) => Ok(*v),
        other => Err(SqlError::new(
            "22P02",
            format!("invalid integer argument: {other}"),
        )),
    }
}
