//! Parallel aggregation: an aggregate over a large scan of a table's clustered key range is split
//! at separator keys of the table's B+tree into parts, one per thread (the session's own thread
//! takes the first); each thread scans its part with the statement's snapshot and folds its rows
//! into partial aggregate states, which are then merged per group (as PostgreSQL's Partial and
//! Finalize Aggregate under a Gather).
//!
//! Taken only where the result cannot differ from the serial run's: every aggregate's states
//! merge ([`Accumulator::mergeable`]), and every expression the threads evaluate (the scan's
//! filter, the group keys, the aggregates' arguments and FILTERs) is parallel safe: it reads only
//! the row, literals and parameters, and calls no volatile function (those read the session, the
//! database or the clock). Sums of floating-point values may round differently, as they do in
//! PostgreSQL. Not taken under EXPLAIN ANALYZE, whose per-node counters are the session
//! thread's. `max_parallel_workers_per_gather` bounds the extra threads (0 turns this off).

use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

use steady_engine::table::RowScan;
use steady_engine::version::IndexId;

use super::{
    as_ref, encode_range, finish_groups, group_rows, BoxedSource, ExecCtx, Groups, Row, ScanRows,
    ScanSource,
};
use crate::error::{Result, SqlError};
use crate::execution::aggregate::{Accumulator, AggCall};
use crate::execution::expr::Expr;
use crate::execution::plan::{Access, Plan};

/// Below this many leaves a table is scanned by one thread: starting threads would cost more than
/// they save.
const MIN_PARALLEL_LEAVES: usize = 64;

/// Parts scanned by parallel aggregates since the process started (`steady_metrics`).
static PARTS_SCANNED: AtomicU64 = AtomicU64::new(0);

/// How many parts parallel aggregates have scanned since the process started.
pub fn parts_scanned() -> u64 {
    PARTS_SCANNED.load(Ordering::Relaxed)
}

/// The aggregate's rows computed by several threads, or None when the plan does not qualify.
pub(super) fn aggregate(
    input: &Plan,
    groups: &[Expr],
    calls: &[AggCall],
    ctx: &mut ExecCtx,
) -> Result<Option<Vec<Row>>> {
    let Plan::Scan {
        table,
        access,
        filter,
        columns,
    } = input
    else {
        return Ok(None);
    };
    let workers = ctx
        .info
        .settings
        .parallel_workers()
        .min(spare_cores().max(1));
    let safe = calls.iter().all(|call| {
        Accumulator::mergeable(call) && call.args.iter().chain(&call.filter).all(parallel_safe)
    }) && groups.iter().chain(filter).all(parallel_safe);
    if workers == 0 || !safe || ctx.node_stats.is_some() {
        return Ok(None);
    }
    let (start, end) = match access {
        Access::Full => (Bound::Unbounded, Bound::Unbounded),
        Access::Primary(range) => match encode_range(range, ctx)? {
            Some(bounds) => bounds,
            None => return Ok(None),
        },
        Access::Index(..) => return Ok(None),
    };
    let txn = ctx.txn()?;
    let partition = txn.partition_rows(table, workers + 1, as_ref(&start), as_ref(&end))?;
    if partition.leaves < MIN_PARALLEL_LEAVES || partition.keys.is_empty() {
        return Ok(None);
    }
    let mut scans = Vec::with_capacity(partition.keys.len() + 1);
    for (lower, upper) in partition.ranges(start, end) {
        let scan = txn.scan_rows(table, as_ref(&lower), as_ref(&upper))?;
        scans.push(match columns {
            Some(wanted) => scan.only_columns(wanted.clone()),
            None => scan,
        });
    }
    PARTS_SCANNED.fetch_add(scans.len() as u64, Ordering::Relaxed);
    let counted = (table.id, access);
    let partials = run_parts(scans, filter.as_ref(), counted, (groups, calls), ctx);
    let mut merged: Option<Groups> = None;
    for partial in partials {
        let partial = partial?;
        match merged.as_mut() {
            None => merged = Some(partial),
            Some(merged) => merge_groups(merged, partial)?,
        }
    }
    let merged = merged.ok_or_else(|| SqlError::new("XX000", "a parallel scan had no parts"))?;
    finish_groups(merged, calls).map(Some)
}

/// Each part's groups, the first computed on this thread, the others on scoped threads. Each
/// part counts as a scan of the table through `access` (`pg_stat_user_tables`), as each
/// worker's scan of a parallel scan does in PostgreSQL.
fn run_parts(
    scans: Vec<RowScan>,
    filter: Option<&Expr>,
    (table, access): (IndexId, &Access),
    (groups, calls): (&[Expr], &[AggCall]),
    ctx: &mut ExecCtx,
) -> Vec<Result<Groups>> {
    let (params, info) = (ctx.params, ctx.info);
    let settings = steady_types::zone::ThreadSettings::current();
    let part = move |scan: RowScan, ctx: &mut ExecCtx| {
        let source = ScanSource::new(ScanRows::Stream(Box::new(scan)), filter);
        let mut source: BoxedSource = Box::new(source.counted(table, access, ctx));
        group_rows(&mut source, groups, calls, ctx)
    };
    std::thread::scope(|scope| {
        let mut scans = scans.into_iter();
        let first = scans.next();
        let helpers: Vec<_> = scans
            .map(|scan| {
                let settings = settings.clone();
                scope.spawn(move || {
                    settings.install();
                    part(scan, &mut ExecCtx::new(None, None, params, info))
                })
            })
            .collect();
        let mut results: Vec<Result<Groups>> = first.into_iter().map(|s| part(s, ctx)).collect();
        for helper in helpers {
            results.push(helper.join().unwrap_or_else(|_| {
                Err(SqlError::new("XX000", "a parallel scan thread panicked"))
            }));
        }
        results
    })
}

/// Folds another part's groups into `into`.
fn merge_groups(into: &mut Groups, part: Groups) -> Result<()> {
    for (key, states) in part {
        match into.get_mut(&key) {
            Some(existing) => {
                for (state, other) in existing.iter_mut().zip(states) {
                    state.merge(other)?;
                }
            }
            None => {
                into.insert(key, states);
            }
        }
    }
    Ok(())
}

/// Cores beyond the one the session runs on (a one-core machine still gets one helper, as
/// PostgreSQL starts its workers whatever the cores: the answers must not depend on the machine).
fn spare_cores() -> usize {
    // Asked once: the answer reads the process's affinity and cgroup files.
    static SPARE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *SPARE.get_or_init(|| std::thread::available_parallelism().map_or(0, |n| n.get() - 1))
}

/// Whether a thread without the session's transaction can evaluate `expr` with the same result.
fn parallel_safe(expr: &Expr) -> bool {
    let mut safe = true;
    expr.visit(&mut |e| {
        safe &= !matches!(e, Expr::Outer { .. } | Expr::Subquery(_) | Expr::AggRef(_))
            && !matches!(e, Expr::Call(f, _) if f.volatile);
    });
    safe
}
