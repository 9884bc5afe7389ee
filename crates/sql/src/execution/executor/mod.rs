//! The executor: plans become pull-based row sources (`next` until `None`), run inside one
//! transaction.
//!
//! Scans stream from the engine (a full scan never holds the table in memory); sorts, joins'
//! inner sides, aggregates and set operations materialise their input. Every source gets the
//! [`ExecCtx`] on each call rather than holding it, so expressions can run subqueries through the
//! same transaction. With instrumentation on (EXPLAIN ANALYZE) each node counts its rows and the
//! buffer-pool pages its thread hit and read while inside it (inclusive of its inputs).

mod hashing;
mod join;
pub mod lock_rows;
mod parallel;
mod window;

pub use parallel::parts_scanned as parallel_parts_scanned;

use join::{JoinSource, LateralSource};

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use steady_engine::codec::{encode_key, prefix_successor};
use steady_engine::engine::{Engine, Transaction};
use steady_engine::io::{thread_io, ThreadIo};
use steady_engine::table::RowScan;
use steady_engine::version::IndexId;
use steady_types::{DataType, Value, PG_EPOCH_UNIX_DAYS, USECS_PER_DAY};

use crate::error::{Result, SqlError};
use crate::execution::aggregate::{
    compare_by_keys, compare_rows, compare_under_key, Accumulator, AggCall, AggFunc,
};
use crate::execution::expr::{Expr, Subquery};
use crate::execution::plan::{Access, JoinKind, KeyRange, Plan, SetOpKind, SortKey};
use crate::execution::set_functions::{Series, SetCall};
use crate::execution::table_activity::{Counts, PendingCounts, TableActivity};
use crate::execution::write::Written;

pub type Row = Vec<Value>;

/// Who is running the statement: what `current_user` and friends report.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub id: u32,
    /// The session user: the name it logged in under (`session_user`).
    pub user: String,
    /// The role its statements run as (`current_user`: the session user's, or the one of SET
    /// ROLE) when that is a role of the catalog; None: the bootstrap superuser
    /// (`execution::privileges`).
    pub role: Option<String>,
    /// The session user's own role, which RESET ROLE returns to.
    pub session_role: Option<String>,
    pub database: String,
    pub settings: crate::execution::settings::Settings,
    pub cancel: crate::execution::cancel::CancelHandle,
    /// Every session's activity (`pg_stat_activity`); `None` outside a database.
    pub activities: Option<Arc<crate::execution::activity::Activities>>,
    /// The values `nextval` gave this session (`currval`, `lastval`).
    pub sequences: Arc<parking_lot::Mutex<crate::execution::sequences::SessionSequences>>,
    /// The session's `random()` generator (`setseed`).
    pub random: Arc<parking_lot::Mutex<crate::execution::random::SessionRandom>>,
    /// Every table's activity counters (`pg_stat_user_tables`); `None` outside a database.
    pub table_activity: Option<Arc<TableActivity>>,
    /// Every statement's counters (`pg_stat_statements`); `None` outside a database.
    pub statement_stats: Option<Arc<crate::execution::statements::StatementStats>>,
    /// This session's counts not yet added to `table_activity`.
    pub pending_counts: Arc<PendingCounts>,
    /// Settings `set_config` changed during the statement, validated, in order: the session
    /// applies them when the statement ends (a statement reads its settings unchanged).
    pub set_config_changes: Arc<parking_lot::Mutex<Vec<(String, String)>>>,
    /// The transaction's foreign-key checks left for later and its SET CONSTRAINTS modes.
    pub foreign_key_checks: Arc<parking_lot::Mutex<crate::execution::fk_checks::ForeignKeyChecks>>,
}

/// Per plan node figures for EXPLAIN ANALYZE.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeStats {
    pub rows: u64,
    pub loops: u64,
    pub io: ThreadIo,
}

/// What a running statement can reach.
pub struct ExecCtx<'a> {
    engine: Option<Arc<Engine>>,
    txn: Option<&'a mut Transaction>,
    params: &'a [Value],
    info: &'a SessionInfo,
    outer: Vec<Row>,
    subquery_results: HashMap<usize, Vec<Row>>,
    /// Per recursive union running: the rows its previous round added.
    work_tables: HashMap<usize, Vec<Row>>,
    statement_time: i64,
    /// When the statement's transaction began (`now()`): [`steady_types::zone::transaction_time`],
    /// else the statement's time.
    transaction_time: i64,
    /// Per node (pre-order number) when instrumented.
    pub node_stats: Option<Vec<NodeStats>>,
    /// Interrupt checks left before the next real one (see [`ExecCtx::check_interrupt`]).
    interrupt_countdown: std::cell::Cell<u32>,
    /// Rows written by the statement's write node, once it has run.
    changed: Option<u64>,
    /// Rows of parameter values that a one-row `INSERT ... VALUES ($1, …)` inserts in place of
    /// its one row (`Session::execute_prepared_rows`); taken by the INSERT.
    param_rows: Option<Vec<Vec<Value>>>,
}

/// A parameter's value as its declared or inferred type.
pub fn typed_param(value: Value, ty: Option<&DataType>) -> Result<Value> {
    match (ty, &value) {
        (Some(ty), Value::Text(text)) if *ty != DataType::Text => Ok(Value::parse(ty, text)?),
        (Some(ty), v) if v.data_type().as_ref() != Some(ty) && !v.is_null() => Ok(v.cast_to(ty)?),
        _ => Ok(value),
    }
}

/// How many rows go by between two looks at the cancel flag and the statement deadline.
const INTERRUPT_CHECK_EVERY: u32 = 256;

impl<'a> ExecCtx<'a> {
    pub fn new(
        engine: Option<Arc<Engine>>,
        txn: Option<&'a mut Transaction>,
        params: &'a [Value],
        info: &'a SessionInfo,
    ) -> Self {
        let statement_time = now_micros();
        ExecCtx {
            engine,
            txn,
            params,
            info,
            outer: Vec::new(),
            subquery_results: HashMap::new(),
            work_tables: HashMap::new(),
            statement_time,
            transaction_time: steady_types::zone::transaction_time().unwrap_or(statement_time),
            node_stats: None,
            interrupt_countdown: std::cell::Cell::new(0),
            changed: None,
            param_rows: None,
        }
    }

    /// Gives the statement rows of parameter values (see [`ExecCtx::take_param_rows`]).
    pub fn set_param_rows(&mut self, rows: Vec<Vec<Value>>) {
        self.param_rows = Some(rows);
    }

    /// The rows of parameter values the statement was given, once.
    pub fn take_param_rows(&mut self) -> Option<Vec<Vec<Value>>> {
        self.param_rows.take()
    }

    /// Counts into this session's pending counts of table `id` (see
    /// [`crate::execution::table_activity`]).
    pub fn count(&self, id: IndexId, count: impl FnOnce(&mut Counts)) {
        self.info.pending_counts.add(id, count);
    }

    /// Every table's activity counters, this session's pending counts added first (none
    /// outside a database).
    pub fn table_activity(&self) -> Option<&Arc<TableActivity>> {
        let shared = self.info.table_activity.as_ref()?;
        self.info.pending_counts.flush_into(shared);
        Some(shared)
    }

    /// Every statement's counters, if the session belongs to a database.
    pub fn statement_stats(&self) -> Option<&crate::execution::statements::StatementStats> {
        self.info.statement_stats.as_deref()
    }

    /// The number of rows the statement's write node wrote, if it had one (taken once).
    pub fn take_changed(&mut self) -> Option<u64> {
        self.changed.take()
    }

    /// Opens a write node's result: notes its count, gives its RETURNING rows.
    fn written(&mut self, written: Written) -> RowsSource {
        self.changed = Some(written.count);
        RowsSource::new(written.returned)
    }

    /// The database, for statements and functions that read the catalog.
    pub fn engine(&self) -> Result<&Arc<Engine>> {
        self.engine
            .as_ref()
            .ok_or_else(|| SqlError::new("XX000", "no database for this expression"))
    }

    /// The transaction, for statements that read or write tables.
    pub fn txn(&mut self) -> Result<&mut Transaction> {
        self.txn
            .as_deref_mut()
            .ok_or_else(|| SqlError::new("XX000", "no transaction for this statement"))
    }

    /// Runs `f` with the transaction taken out of the context, so that `f` may evaluate
    /// expressions with the context while it uses the transaction — only expressions that read
    /// no table and call no volatile function ([`Expr::is_movable`]): one that needs the
    /// transaction fails (XX000).
    pub(crate) fn with_txn_apart<R>(
        &mut self,
        f: impl FnOnce(&mut Transaction, &mut ExecCtx<'a>) -> R,
    ) -> Result<R> {
        let txn = self
            .txn
            .take()
            .ok_or_else(|| SqlError::new("XX000", "no transaction for this statement"))?;
        let result = f(&mut *txn, self);
        self.txn = Some(txn);
        Ok(result)
    }

    pub fn param(&self, index: usize, ty: Option<&DataType>) -> Result<Value> {
        let value = self.params.get(index).cloned().ok_or_else(|| {
            SqlError::new("08P01", format!("there is no parameter ${}", index + 1))
        })?;
        typed_param(value, ty)
    }

    pub fn outer_value(&self, depth: usize, index: usize) -> Value {
        self.outer
            .len()
            .checked_sub(depth)
            .and_then(|level| self.outer[level].get(index))
            .cloned()
            .unwrap_or(Value::Null)
    }

    pub fn statement_time(&self) -> i64 {
        self.statement_time
    }

    /// When the statement's transaction began, as `now()` and `current_date` give it.
    pub fn transaction_time(&self) -> i64 {
        self.transaction_time
    }

    pub fn database_name(&self) -> String {
        self.info.database.clone()
    }

    /// The session user's name (`session_user`).
    pub fn user_name(&self) -> String {
        self.info.user.clone()
    }

    /// The name the session's statements run as (`current_user`): SET ROLE's role, else the
    /// session user's.
    pub fn current_user(&self) -> String {
        self.info
            .role
            .clone()
            .unwrap_or_else(|| self.info.user.clone())
    }

    /// The name the catalogs give the bootstrap superuser (oid 10, every object's owner): the
    /// session user's when it logged in as that superuser, else `steady`.
    pub fn bootstrap_name(&self) -> String {
        match self.info.session_role {
            None => self.info.user.clone(),
            Some(_) => "steady".to_owned(),
        }
    }

    /// The role the session's statements run as (None: the bootstrap superuser).
    pub fn info_role(&self) -> Option<String> {
        self.info.role.clone()
    }

    /// Whether the session's current role is a superuser.
    pub fn is_superuser(&self) -> Result<bool> {
        match &self.engine {
            Some(engine) => {
                crate::execution::privileges::is_superuser(engine, self.info.role.as_deref())
            }
            None => Ok(self.info.role.is_none()),
        }
    }

    /// Fails with 42501 unless the session's role holds every privilege in `required`.
    pub fn check_privileges(
        &self,
        required: &[crate::execution::privileges::Required],
    ) -> Result<()> {
        match &self.engine {
            Some(engine) => {
                crate::execution::privileges::check(engine, self.info.role.as_deref(), required)
            }
            None => Ok(()),
        }
    }

    /// Fails with 57014 once the statement has been cancelled or has timed out.
    /// Fails with 57014 once the statement is cancelled or past its timeout. Called per row, it
    /// looks at the (shared, locked) cancel state only every [`INTERRUPT_CHECK_EVERY`] calls.
    pub fn check_interrupt(&self) -> Result<()> {
        match self.interrupt_countdown.get() {
            0 => {
                self.interrupt_countdown.set(INTERRUPT_CHECK_EVERY);
                self.info.cancel.check()
            }
            left => {
                self.interrupt_countdown.set(left - 1);
                Ok(())
            }
        }
    }

    /// The values `nextval` gave this session.
    pub fn sequences(&self) -> &parking_lot::Mutex<crate::execution::sequences::SessionSequences> {
        &self.info.sequences
    }

    /// The session's `random()` generator.
    pub fn random(&self) -> &parking_lot::Mutex<crate::execution::random::SessionRandom> {
        &self.info.random
    }

    /// Looks at the cancel flag and the statement deadline now (see `check_interrupt`).
    pub fn check_cancel(&self) -> Result<()> {
        self.info.cancel.check()
    }

    pub fn setting(&self, name: &str) -> Result<String> {
        self.info.settings.show(name)
    }

    /// `set_config(name, value, false)`: validates the change against the settings as they will
    /// be after this statement's earlier changes, and queues it for the session; returns the new
    /// value as `current_setting` will show it.
    pub fn queue_setting(&self, name: &str, value: &str) -> Result<String> {
        let mut changes = self.info.set_config_changes.lock();
        let mut settings = self.info.settings.clone();
        for (n, v) in changes.iter() {
            settings.set(n, v)?;
        }
        settings.set(name, value)?;
        changes.push((name.to_owned(), value.to_owned()));
        settings.show(name)
    }

    /// The transaction's foreign-key checks left for later ([`crate::execution::fk_checks`]).
    pub fn foreign_key_checks(
        &self,
    ) -> parking_lot::MutexGuard<'_, crate::execution::fk_checks::ForeignKeyChecks> {
        self.info.foreign_key_checks.lock()
    }

    pub fn session_id(&self) -> u32 {
        self.info.id
    }

    /// Every session's activity.
    pub fn activities(&self) -> Result<&Arc<crate::execution::activity::Activities>> {
        self.info
            .activities
            .as_ref()
            .ok_or_else(|| SqlError::new("XX000", "no sessions outside a database"))
    }

    /// Runs `plan` with `row` as its enclosing row (for correlated subqueries and LATERAL).
    pub fn run_with_outer(&mut self, plan: &Plan, row: &[Value]) -> Result<Vec<Row>> {
        self.outer.push(row.to_vec());
        let saved = self.node_stats.take();
        let rows = collect(plan, self);
        self.node_stats = saved;
        self.outer.pop();
        rows
    }

    /// The rows of a subquery for the current `row` (cached when it does not depend on it).
    pub fn run_subquery(&mut self, sub: &Subquery, row: &[Value]) -> Result<Vec<Row>> {
        if !sub.correlated {
            if let Some(rows) = self.subquery_results.get(&sub.id) {
                return Ok(rows.clone());
            }
        }
        let rows = self.run_with_outer(&sub.plan, row)?;
        if !sub.correlated {
            self.subquery_results.insert(sub.id, rows.clone());
        }
        Ok(rows)
    }
}

/// The time now as a timestamp value (microseconds since 2000-01-01).
pub(crate) fn now_micros() -> i64 {
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64);
    unix - PG_EPOCH_UNIX_DAYS * USECS_PER_DAY
}

/// Evaluates an expression that reads no row, parameter or table.
pub fn eval_constant(expr: &Expr) -> Result<Value> {
    let info = SessionInfo {
        id: 0,
        user: String::new(),
        role: None,
        session_role: None,
        database: String::new(),
        settings: crate::execution::settings::Settings::default(),
        cancel: crate::execution::cancel::CancelHandle::default(),
        activities: None,
        sequences: Arc::default(),
        random: Arc::default(),
        table_activity: None,
        statement_stats: None,
        pending_counts: Arc::default(),
        set_config_changes: Arc::default(),
        foreign_key_checks: Arc::default(),
    };
    let mut ctx = ExecCtx::new(None, None, &[], &info);
    expr.eval(&[], &mut ctx)
}

/// Runs a plan to completion.
pub fn collect(plan: &Plan, ctx: &mut ExecCtx) -> Result<Vec<Row>> {
    let mut numbering = 0;
    let mut source = open(plan, ctx, &mut numbering)?;
    rows_of(&mut source, ctx)
}

/// What [`Source::for_each_row`] calls on each row.
type RowVisitor<'f> = dyn FnMut(&Row, &mut ExecCtx) -> Result<()> + 'f;

/// A running plan node.
pub trait Source {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>>;

    /// Calls `visit` on every remaining row, lending each. A source that can decode each row
    /// into the storage of the one before (a scan) overrides it to allocate nothing per row.
    fn for_each_row(&mut self, ctx: &mut ExecCtx, visit: &mut RowVisitor) -> Result<()> {
        visit_each_next(self, ctx, visit)
    }
}

/// [`Source::for_each_row`] by `next`: each row owned, then lent.
fn visit_each_next<S: Source + ?Sized>(
    source: &mut S,
    ctx: &mut ExecCtx,
    visit: &mut RowVisitor,
) -> Result<()> {
    while let Some(row) = source.next(ctx)? {
        visit(&row, ctx)?;
    }
    Ok(())
}

type BoxedSource<'p> = Box<dyn Source + 'p>;

/// Opens a plan; `numbering` gives nodes their pre-order numbers (for EXPLAIN ANALYZE).
pub fn open<'p>(
    plan: &'p Plan,
    ctx: &mut ExecCtx,
    numbering: &mut usize,
) -> Result<BoxedSource<'p>> {
    let node = *numbering;
    *numbering += 1;
    let before = thread_io();
    let source = open_node(plan, ctx, numbering)?;
    if let Some(stats) = ctx.node_stats.as_mut() {
        if stats.len() <= node {
            stats.resize(node + 1, NodeStats::default());
        }
        stats[node].loops += 1;
        add_io(&mut stats[node], thread_io().since(before));
        return Ok(Box::new(Instrumented {
            inner: source,
            node,
        }));
    }
    Ok(source)
}

fn add_io(stats: &mut NodeStats, io: ThreadIo) {
    stats.io.hits += io.hits;
    stats.io.reads += io.reads;
    stats.io.read_ahead += io.read_ahead;
}

/// Counts an UPDATE or DELETE of `target`'s table: the scan that found its rows, and (`rows`)
/// the rows it wrote.
fn count_write(
    target: &crate::execution::write::Target,
    ctx: &ExecCtx,
    rows: impl FnOnce(&mut Counts),
) {
    ctx.count(target.table.id, |c| {
        c.scan(&target.access, 0);
        rows(c);
    });
}

struct Instrumented<'p> {
    inner: BoxedSource<'p>,
    node: usize,
}

impl Source for Instrumented<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        let before = thread_io();
        let row = self.inner.next(ctx)?;
        if let Some(stats) = ctx.node_stats.as_mut().and_then(|s| s.get_mut(self.node)) {
            stats.rows += u64::from(row.is_some());
            add_io(stats, thread_io().since(before));
        }
        Ok(row)
    }
}

fn open_node<'p>(
    plan: &'p Plan,
    ctx: &mut ExecCtx,
    numbering: &mut usize,
) -> Result<BoxedSource<'p>> {
    Ok(match plan {
        Plan::Scan {
            table,
            access,
            filter,
            columns,
        } => Box::new(
            open_scan(table, access, filter.as_ref(), columns.as_deref(), ctx)?
                .counted(table.id, access, ctx),
        ),
        Plan::Values { rows, .. } => Box::new(ValuesSource { rows, next: 0 }),
        Plan::Insert(insert) => {
            let written = insert.run(ctx)?;
            ctx.count(insert.table.id, |c| c.n_tup_ins += written.count);
            Box::new(ctx.written(written))
        }
        Plan::Update(update) => {
            let written = update.run(ctx)?;
            let rows = written.count;
            count_write(&update.target, ctx, |c| c.n_tup_upd += rows);
            Box::new(ctx.written(written))
        }
        Plan::Delete(delete) => {
            let written = delete.run(ctx)?;
            let rows = written.count;
            count_write(&delete.target, ctx, |c| c.n_tup_del += rows);
            Box::new(ctx.written(written))
        }
        Plan::System(table, oid) => {
            let mut rows = (table.rows)(ctx)?;
            for row in &mut rows {
                row.push(Value::BigInt(*oid));
            }
            Box::new(RowsSource::new(rows))
        }
        Plan::Materialized { id, input } => {
            let rows = match ctx.subquery_results.get(id) {
                Some(rows) => rows.clone(),
                None => {
                    let rows = collect(input, ctx)?;
                    ctx.subquery_results.insert(*id, rows.clone());
                    rows
                }
            };
            Box::new(RowsSource::new(rows))
        }
        Plan::WithWrites { writes, body } => {
            run_writes_first(writes, ctx)?;
            open(body, ctx, numbering)?
        }
        Plan::RecursiveUnion {
            id,
            anchor,
            recursive,
            all,
        } => Box::new(RecursiveUnionSource::new(
            *id, anchor, recursive, *all, ctx,
        )?),
        Plan::WorkTable { id } => Box::new(RowsSource::new(
            ctx.work_tables.get(id).cloned().unwrap_or_default(),
        )),
        Plan::Series { start, stop, step } => {
            Box::new(SeriesSource::new(start, stop, step.as_ref(), ctx)?)
        }
        Plan::Filter { input, predicate } => Box::new(FilterSource {
            input: open(input, ctx, numbering)?,
            predicate,
        }),
        Plan::Project { input, exprs } => Box::new(ProjectSource {
            input: open(input, ctx, numbering)?,
            movable: movable_columns(exprs),
            exprs,
        }),
        Plan::Aggregate {
            input,
            groups,
            aggregates,
            sets,
        } => {
            if sets.is_empty() {
                if let Some(rows) = parallel::aggregate(input, groups, aggregates, ctx)? {
                    return Ok(Box::new(RowsSource::new(rows)));
                }
            }
            let mut input = open(input, ctx, numbering)?;
            let rows = if sets.is_empty() {
                aggregate(&mut input, groups, aggregates, ctx)?
            } else {
                aggregate_sets(&mut input, groups, aggregates, sets, ctx)?
            };
            Box::new(RowsSource::new(rows))
        }
        Plan::Sort { input, keys } => {
            let rows = match input.as_ref() {
                Plan::Distinct { input: inner } if ctx.node_stats.is_none() => {
                    // The Distinct node is done here, with the sort: it keeps its number.
                    *numbering += 1;
                    let mut inner = open(inner, ctx, numbering)?;
                    sort_distinct(&mut inner, keys, ctx)?
                }
                _ => {
                    let mut input = open(input, ctx, numbering)?;
                    sort_rows(rows_of(&mut input, ctx)?, keys, ctx)?
                }
            };
            Box::new(RowsSource::new(rows))
        }
        Plan::ProjectSet { input, calls } => Box::new(ProjectSetSource {
            input: open(input, ctx, numbering)?,
            calls,
            pending: std::collections::VecDeque::new(),
        }),
        Plan::Window { input, calls } => {
            let mut input = open(input, ctx, numbering)?;
            Box::new(RowsSource::new(window::window(&mut input, calls, ctx)?))
        }
        Plan::Limit {
            input,
            limit,
            offset,
            ties,
        } => Box::new(LimitSource::new(
            open(input, ctx, numbering)?,
            (limit.as_ref(), offset.as_ref()),
            ties,
            ctx,
        )?),
        Plan::LockRows {
            input,
            table,
            mode,
            wait,
            recheck,
        } => Box::new(lock_rows::LockRowsSource {
            input: open(input, ctx, numbering)?,
            table,
            lock: (*mode, *wait),
            recheck: recheck.as_ref(),
        }),
        Plan::Distinct { input } => Box::new(DistinctSource {
            input: open(input, ctx, numbering)?,
            seen: BTreeMap::new(),
        }),
        Plan::Join {
            left,
            right,
            kind,
            keys,
            on,
            left_width,
            right_width,
        } => {
            let left = open(left, ctx, numbering)?;
            let inner = drain(&mut open(right, ctx, numbering)?, ctx)?;
            let condition = (*kind, keys.as_slice(), on.as_ref());
            let widths = (*left_width, *right_width);
            Box::new(JoinSource::new(left, inner, condition, widths, ctx)?)
        }
        Plan::Lateral {
            left,
            right,
            kind,
            on,
            right_width,
        } => Box::new(LateralSource {
            left: open(left, ctx, numbering)?,
            right,
            kind: *kind,
            on: on.as_ref(),
            right_width: *right_width,
            pending: std::collections::VecDeque::new(),
        }),
        Plan::SetOp {
            left,
            right,
            op,
            all,
        } => {
            let mut left = open(left, ctx, numbering)?;
            let mut right = open(right, ctx, numbering)?;
            Box::new(RowsSource::new(set_operation(
                &mut left, &mut right, *op, *all, ctx,
            )?))
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Scans
// ---------------------------------------------------------------------------------------------

enum ScanRows {
    Stream(Box<RowScan>),
    Fetched(std::vec::IntoIter<(Vec<u8>, Vec<Value>)>),
}

struct ScanSource<'p> {
    rows: ScanRows,
    filter: Option<&'p Expr>,
    /// Rows read so far, filtered out or not.
    rows_read: u64,
    /// Where the scan and `rows_read` are counted when it ends (`pg_stat_user_tables`).
    tally: Option<ScanTally<'p>>,
}

/// A scan's table and access path, and the session's pending counts they go to.
struct ScanTally<'p> {
    pending: Arc<PendingCounts>,
    table: IndexId,
    access: &'p Access,
}

impl<'p> ScanSource<'p> {
    fn new(rows: ScanRows, filter: Option<&'p Expr>) -> Self {
        ScanSource {
            rows,
            filter,
            rows_read: 0,
            tally: None,
        }
    }

    /// A scan of a range no row can be in (an equality with NULL).
    fn empty(filter: Option<&'p Expr>) -> Self {
        Self::new(ScanRows::Fetched(Vec::new().into_iter()), filter)
    }

    /// Counts this scan, through `access`, in `table`'s activity counters when it ends.
    fn counted(mut self, table: IndexId, access: &'p Access, ctx: &ExecCtx) -> Self {
        self.tally = Some(ScanTally {
            pending: Arc::clone(&ctx.info.pending_counts),
            table,
            access,
        });
        self
    }
}

impl Drop for ScanSource<'_> {
    fn drop(&mut self) {
        if let Some(tally) = &self.tally {
            let (access, rows) = (tally.access, self.rows_read);
            tally.pending.add(tally.table, |c| c.scan(access, rows));
        }
    }
}

impl Source for ScanSource<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            ctx.check_interrupt()?;
            let next = match &mut self.rows {
                ScanRows::Stream(scan) => scan.next_values().transpose()?,
                ScanRows::Fetched(rows) => rows.next().map(|(_, row)| row),
            };
            let Some(row) = next else {
                return Ok(None);
            };
            self.rows_read += 1;
            match self.filter {
                Some(filter) if !filter.eval_predicate(&row, ctx)? => continue,
                _ => return Ok(Some(row)),
            }
        }
    }

    fn for_each_row(&mut self, ctx: &mut ExecCtx, visit: &mut RowVisitor) -> Result<()> {
        let ScanRows::Stream(scan) = &mut self.rows else {
            return visit_each_next(self, ctx, visit);
        };
        let mut row = Vec::new();
        loop {
            ctx.check_interrupt()?;
            match scan.next_values_into(&mut row) {
                None => return Ok(()),
                Some(decoded) => decoded?,
            }
            self.rows_read += 1;
            match self.filter {
                Some(filter) if !filter.eval_predicate(&row, ctx)? => continue,
                _ => visit(&row, ctx)?,
            }
        }
    }
}

/// The start and end of a key range.
pub type KeyBounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Where a range's value falls for a key column's type.
enum Fit {
    /// The value in the column's type.
    Exact(Value),
    /// An integer beyond the column type's largest or smallest value.
    Above,
    Below,
    /// Not convertible: the range reads as if this bound were absent (a superset).
    Unknown,
}

fn fit(value: Value, ty: &DataType) -> Fit {
    let integer =
        |v: &Value| matches!(v, Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_));
    let wide = integer(&value).then(|| crate::types::ops::as_i64(&value));
    match (value.cast_to(ty), wide) {
        (Ok(v), _) => Fit::Exact(v),
        (Err(_), Some(n)) if n > 0 => Fit::Above,
        (Err(_), Some(_)) => Fit::Below,
        (Err(_), None) => Fit::Unknown,
    }
}

/// Encoded key bounds of a range; `None` when no row can match (a NULL value, or an integer
/// equality or bound beyond the key column's type). For an integer value against an integer key
/// column the bounds are exact, which lets the planner drop such conjuncts from the filter.
pub fn encode_range(range: &KeyRange, ctx: &mut ExecCtx) -> Result<Option<KeyBounds>> {
    let mut prefix = Vec::new();
    for (expr, ty) in range.equal.iter().zip(&range.types) {
        let value = expr.eval(&[], ctx)?;
        if value.is_null() {
            return Ok(None);
        }
        match fit(value, ty) {
            Fit::Exact(v) => prefix.push(v),
            Fit::Above | Fit::Below => return Ok(None),
            Fit::Unknown => return Ok(Some((Bound::Unbounded, Bound::Unbounded))),
        }
    }
    let next_type = range.types.get(prefix.len());
    // `Some(None)`: no bound on this side; `None`: nothing can match.
    let bound_key = |expr: Option<&Expr>,
                     upper: bool,
                     ctx: &mut ExecCtx|
     -> Result<Option<Option<Vec<u8>>>> {
        let (Some(expr), Some(ty)) = (expr, next_type) else {
            return Ok(Some(None));
        };
        let value = expr.eval(&[], ctx)?;
        if value.is_null() {
            return Ok(None);
        }
        let value = match (fit(value, ty), upper) {
            (Fit::Exact(v), _) => v,
            (Fit::Above, false) | (Fit::Below, true) => return Ok(None),
            (Fit::Above, true) | (Fit::Below, false) | (Fit::Unknown, _) => return Ok(Some(None)),
        };
        let mut key = prefix.clone();
        key.push(value);
        Ok(Some(Some(encode_key(&key))))
    };
    let (Some(lower), Some(upper)) = (
        bound_key(range.lower.as_ref(), false, ctx)?,
        bound_key(range.upper.as_ref(), true, ctx)?,
    ) else {
        return Ok(None);
    };
    let start = match lower {
        Some(key) => Bound::Included(key),
        None if prefix.is_empty() => Bound::Unbounded,
        None => Bound::Included(encode_key(&prefix)),
    };
    let end_prefix = upper.or_else(|| (!prefix.is_empty()).then(|| encode_key(&prefix)));
    let end = match end_prefix.and_then(|p| prefix_successor(&p)) {
        Some(successor) => Bound::Excluded(successor),
        None => Bound::Unbounded,
    };
    Ok(Some((start, end)))
}

/// The one primary key a range of equalities on every key column reads (`Some(None)`: no row
/// can match); `None` when the range is not a single key. A single key is read with a point
/// lookup rather than a scan, which would copy its whole leaf.
pub fn single_key(range: &KeyRange, ctx: &mut ExecCtx) -> Result<Option<Option<Vec<u8>>>> {
    if range.equal.is_empty() || range.equal.len() != range.types.len() {
        return Ok(None);
    }
    Ok(match encode_range(range, ctx)? {
        Some((Bound::Included(key), _)) => Some(Some(key)),
        Some(_) => None,
        None => Some(None),
    })
}

fn open_scan<'p>(
    table: &'p Arc<steady_engine::catalog::TableDef>,
    access: &'p Access,
    filter: Option<&'p Expr>,
    columns: Option<&[bool]>,
    ctx: &mut ExecCtx,
) -> Result<ScanSource<'p>> {
    if let Access::Primary(range) = access {
        if let Some(key) = single_key(range, ctx)? {
            let rows = match key {
                Some(pk) => {
                    let row = ctx.txn()?.get_row(table, &pk)?;
                    row.map(|row| (pk, row)).into_iter().collect()
                }
                None => Vec::new(),
            };
            let rows = ScanRows::Fetched(rows.into_iter());
            return Ok(ScanSource::new(rows, filter));
        }
    }
    let (start, end) = match access {
        Access::Full => (Bound::Unbounded, Bound::Unbounded),
        Access::Primary(range) => match encode_range(range, ctx)? {
            None => return Ok(ScanSource::empty(filter)),
            Some(bounds) => bounds,
        },
        Access::Index(index, range) => match encode_range(range, ctx)? {
            None => return Ok(ScanSource::empty(filter)),
            Some((start, end)) => {
                let rows = ctx
                    .txn()?
                    .index_rows(table, index, as_ref(&start), as_ref(&end))?;
                let rows = ScanRows::Fetched(rows.into_iter());
                return Ok(ScanSource::new(rows, filter));
            }
        },
    };
    let scan = ctx.txn()?.scan_rows(table, as_ref(&start), as_ref(&end))?;
    let scan = match columns {
        Some(wanted) => scan.only_columns(wanted.to_vec()),
        None => scan,
    };
    Ok(ScanSource::new(ScanRows::Stream(Box::new(scan)), filter))
}

pub fn as_ref(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

// ---------------------------------------------------------------------------------------------
// Simple sources
// ---------------------------------------------------------------------------------------------

struct RowsSource {
    rows: std::vec::IntoIter<Row>,
}

impl RowsSource {
    fn new(rows: Vec<Row>) -> Self {
        RowsSource {
            rows: rows.into_iter(),
        }
    }
}

impl Source for RowsSource {
    fn next(&mut self, _: &mut ExecCtx) -> Result<Option<Row>> {
        Ok(self.rows.next())
    }
}

struct ValuesSource<'p> {
    rows: &'p [Vec<Expr>],
    next: usize,
}

impl Source for ValuesSource<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        let Some(exprs) = self.rows.get(self.next) else {
            return Ok(None);
        };
        self.next += 1;
        eval_each(exprs.iter(), &[], ctx).map(Some)
    }
}

struct SeriesSource {
    series: Series,
}

impl SeriesSource {
    fn new(start: &Expr, stop: &Expr, step: Option<&Expr>, ctx: &mut ExecCtx) -> Result<Self> {
        let start = start.eval(&[], ctx)?;
        let stop = stop.eval(&[], ctx)?;
        let step = step.map(|s| s.eval(&[], ctx)).transpose()?;
        Ok(SeriesSource {
            series: Series::new(start, stop, step)?,
        })
    }
}

impl Source for SeriesSource {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        ctx.check_interrupt()?;
        Ok(self.series.next_value().map(|v| vec![v]))
    }
}

struct FilterSource<'p> {
    input: BoxedSource<'p>,
    predicate: &'p Expr,
}

impl Source for FilterSource<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        while let Some(row) = self.input.next(ctx)? {
            if self.predicate.eval_predicate(&row, ctx)? {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }

    fn for_each_row(&mut self, ctx: &mut ExecCtx, visit: &mut RowVisitor) -> Result<()> {
        let predicate = self.predicate;
        self.input.for_each_row(
            ctx,
            &mut |row, ctx| match predicate.eval_predicate(row, ctx)? {
                true => visit(row, ctx),
                false => Ok(()),
            },
        )
    }
}

struct ProjectSource<'p> {
    input: BoxedSource<'p>,
    exprs: &'p [Expr],
    /// Per expression: whether it is a bare column no later expression reads, so its value can
    /// be moved out of the input row rather than cloned.
    movable: Vec<bool>,
}

impl Source for ProjectSource<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        let Some(mut row) = self.input.next(ctx)? else {
            return Ok(None);
        };
        let mut values = Vec::with_capacity(self.exprs.len());
        for (expr, &movable) in self.exprs.iter().zip(&self.movable) {
            values.push(match expr {
                Expr::Column(i) if movable && *i < row.len() => {
                    std::mem::replace(&mut row[*i], Value::Null)
                }
                _ => expr.eval(&row, ctx)?,
            });
        }
        Ok(Some(values))
    }

    /// Reads the input lent and lends each projected row, built in one reused row.
    fn for_each_row(&mut self, ctx: &mut ExecCtx, visit: &mut RowVisitor) -> Result<()> {
        let exprs = self.exprs;
        let mut values = Vec::with_capacity(exprs.len());
        self.input.for_each_row(ctx, &mut |row, ctx| {
            values.clear();
            for expr in exprs {
                values.push(match expr {
                    Expr::Column(i) if *i < row.len() => row[*i].clone(),
                    _ => expr.eval(row, ctx)?,
                });
            }
            visit(&values, ctx)
        })
    }
}

/// For each projected expression, whether it is a bare column that no later expression reads
/// (a subquery may read the whole row as its outer row).
fn movable_columns(exprs: &[Expr]) -> Vec<bool> {
    let reads = |expr: &Expr, column: usize| {
        let mut found = false;
        expr.visit(&mut |e| {
            found |= matches!(e, Expr::Column(c) if *c == column) || matches!(e, Expr::Subquery(_))
        });
        found
    };
    exprs
        .iter()
        .enumerate()
        .map(|(k, expr)| match expr {
            Expr::Column(column) => !exprs[k + 1..].iter().any(|later| reads(later, *column)),
            _ => false,
        })
        .collect()
}

struct LimitSource<'p> {
    input: BoxedSource<'p>,
    remaining: Option<u64>,
    skip: u64,
    /// WITH TIES: the sort keys, and the sort-key values of the last row the limit let through.
    ties: &'p [SortKey],
    last_keys: Option<Vec<Value>>,
}

impl<'p> LimitSource<'p> {
    fn new(
        input: BoxedSource<'p>,
        (limit, offset): (Option<&Expr>, Option<&Expr>),
        ties: &'p [SortKey],
        ctx: &mut ExecCtx,
    ) -> Result<Self> {
        let count = |e: Option<&Expr>, ctx: &mut ExecCtx, what: &str| -> Result<Option<u64>> {
            let Some(e) = e else { return Ok(None) };
            match e.eval(&[], ctx)? {
                Value::Null => Ok(None),
                v => {
                    let n = crate::types::ops::as_i64(&v.cast_to(&DataType::BigInt)?);
                    let code = if what == "LIMIT" { "2201W" } else { "2201X" };
                    u64::try_from(n)
                        .map(Some)
                        .map_err(|_| SqlError::new(code, format!("{what} must not be negative")))
                }
            }
        };
        Ok(LimitSource {
            input,
            remaining: count(limit, ctx, "LIMIT")?,
            skip: count(offset, ctx, "OFFSET")?.unwrap_or(0),
            ties,
            last_keys: None,
        })
    }
}

impl Source for LimitSource<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        if self.remaining == Some(0) {
            return self.next_tie(ctx);
        }
        while self.skip > 0 {
            self.skip -= 1;
            if self.input.next(ctx)?.is_none() {
                return Ok(None);
            }
        }
        let row = self.input.next(ctx)?;
        if let Some(n) = self.remaining.as_mut() {
            *n = n.saturating_sub(1);
            if *n == 0 && !self.ties.is_empty() {
                if let Some(row) = &row {
                    self.last_keys = Some(eval_each(self.ties.iter().map(|k| &k.expr), row, ctx)?);
                }
            }
        }
        Ok(row)
    }
}

impl LimitSource<'_> {
    /// After the limit: the next row if it ties with the last one let through (WITH TIES).
    fn next_tie(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        let Some(last) = &self.last_keys else {
            return Ok(None);
        };
        let Some(row) = self.input.next(ctx)? else {
            return Ok(None);
        };
        let keys = eval_each(self.ties.iter().map(|k| &k.expr), &row, ctx)?;
        if compare_by_keys(&keys, last, self.ties) == Ordering::Equal {
            return Ok(Some(row));
        }
        self.last_keys = None;
        Ok(None)
    }
}

/// Rows ordered as GROUP BY and DISTINCT compare them.
#[derive(Debug, Clone)]
struct RowKey(Row);

impl PartialEq for RowKey {
    fn eq(&self, other: &Self) -> bool {
        compare_rows(&self.0, &other.0).is_eq()
    }
}
impl Eq for RowKey {}
impl PartialOrd for RowKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for RowKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        compare_rows(&self.0, &other.0)
    }
}

struct DistinctSource<'p> {
    input: BoxedSource<'p>,
    seen: BTreeMap<RowKey, ()>,
}

impl Source for DistinctSource<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        while let Some(row) = self.input.next(ctx)? {
            if self.seen.insert(RowKey(row.clone()), ()).is_none() {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }
}

// ---------------------------------------------------------------------------------------------
// Materialising operators
// ---------------------------------------------------------------------------------------------

/// The values of `exprs` over `row`, in a vector of exactly their number (collecting a `Result`
/// iterator would grow it step by step).
fn eval_each<'e>(
    exprs: impl ExactSizeIterator<Item = &'e Expr>,
    row: &[Value],
    ctx: &mut ExecCtx,
) -> Result<Row> {
    let mut values = Vec::with_capacity(exprs.len());
    for expr in exprs {
        values.push(expr.eval(row, ctx)?);
    }
    Ok(values)
}

/// Adds one input row to each aggregate's accumulator (unless the aggregate's FILTER rejects it).
fn accumulate(
    calls: &[AggCall],
    accumulators: &mut [Accumulator],
    row: &Row,
    ctx: &mut ExecCtx,
) -> Result<()> {
    for (call, accumulator) in calls.iter().zip(accumulators.iter_mut()) {
        if call.func == AggFunc::Grouping {
            continue;
        }
        if let Some(filter) = &call.filter {
            if !filter.eval_predicate(row, ctx)? {
                continue;
            }
        }
        if !accumulator.keeps_inputs() {
            // The common shapes fold without building argument vectors (or cloning a column).
            match call.args.as_slice() {
                [] if call.func == AggFunc::CountStar => {
                    accumulator.fold(&[])?;
                    continue;
                }
                [Expr::Column(at)] => {
                    accumulator.fold(std::slice::from_ref(&row[*at]))?;
                    continue;
                }
                [arg] => {
                    accumulator.fold(std::slice::from_ref(&arg.eval(row, ctx)?))?;
                    continue;
                }
                _ => {}
            }
        }
        let args = eval_each(call.args.iter(), row, ctx)?;
        let keys = eval_each(call.order_by.iter().map(|k| &k.expr), row, ctx)?;
        accumulator.add(args, keys)?;
    }
    Ok(())
}

/// Runs the writes of a WITH list once each, in order, keeping their RETURNING rows for the
/// references to them; the count of rows the statement wrote stays the body's own.
fn run_writes_first(writes: &[(usize, Plan)], ctx: &mut ExecCtx) -> Result<()> {
    for (id, write) in writes {
        if ctx.subquery_results.contains_key(id) {
            continue;
        }
        let rows = collect(write, ctx)?;
        ctx.changed = None;
        ctx.subquery_results.insert(*id, rows);
    }
    Ok(())
}

/// The aggregate states of each group, by group key.
type Groups = BTreeMap<RowKey, Vec<Accumulator>>;

fn aggregate(
    input: &mut BoxedSource,
    groups: &[Expr],
    calls: &[AggCall],
    ctx: &mut ExecCtx,
) -> Result<Vec<Row>> {
    finish_groups(group_rows(input, groups, calls, ctx)?, calls)
}

/// An aggregate over grouping sets: the input is read once, each row folded into its group of
/// every set (a key with NULL where the set leaves an expression out); the rows come set by
/// set. A set of no expressions has its one group even over no rows, as a plain aggregate.
fn aggregate_sets(
    input: &mut BoxedSource,
    groups: &[Expr],
    calls: &[AggCall],
    sets: &[Vec<bool>],
    ctx: &mut ExecCtx,
) -> Result<Vec<Row>> {
    let mut found: Vec<HashedGroups> = sets.iter().map(|_| HashedGroups::default()).collect();
    input.for_each_row(ctx, &mut |row, ctx| {
        let key = eval_each(groups.iter(), row, ctx)?;
        for (set, active) in found.iter_mut().zip(sets) {
            let masked = key
                .iter()
                .zip(active)
                .map(|(value, on)| if *on { value.clone() } else { Value::Null })
                .collect();
            let accumulators = set.entry(masked, || calls.iter().map(Accumulator::new).collect());
            accumulate(calls, accumulators, row, ctx)?;
        }
        Ok(())
    })?;
    let mut rows = Vec::new();
    for (set, active) in found.into_iter().zip(sets) {
        let mut table: Groups = set
            .groups
            .into_iter()
            .map(|(key, a)| (RowKey(key), a))
            .collect();
        if table.is_empty() && !active.contains(&true) {
            let accumulators = calls.iter().map(Accumulator::new).collect();
            table.insert(RowKey(vec![Value::Null; groups.len()]), accumulators);
        }
        let mut set_rows = finish_groups(table, calls)?;
        set_grouping_bits(&mut set_rows, groups, calls, active);
        rows.append(&mut set_rows);
    }
    Ok(rows)
}

/// Puts each `GROUPING(…)` call's value into the rows of one grouping set: a bit per argument,
/// the first the highest, set where the set leaves that argument out.
fn set_grouping_bits(rows: &mut [Row], groups: &[Expr], calls: &[AggCall], active: &[bool]) {
    for (at, call) in calls.iter().enumerate() {
        if call.func != AggFunc::Grouping {
            continue;
        }
        let bits = call.args.iter().fold(0i32, |bits, arg| {
            let left_out = groups
                .iter()
                .position(|g| g == arg)
                .is_some_and(|i| !active[i]);
            (bits << 1) | i32::from(left_out)
        });
        for row in rows.iter_mut() {
            row[groups.len() + at] = Value::Integer(bits);
        }
    }
}

/// Folds the input rows into the states of their groups. Without GROUP BY there is one group,
/// present even over no rows.
fn group_rows(
    input: &mut BoxedSource,
    groups: &[Expr],
    calls: &[AggCall],
    ctx: &mut ExecCtx,
) -> Result<Groups> {
    let mut table = Groups::new();
    if groups.is_empty() {
        // One group: no key to build or look up per row.
        let mut accumulators: Vec<Accumulator> = calls.iter().map(Accumulator::new).collect();
        input.for_each_row(ctx, &mut |row, ctx| {
            accumulate(calls, &mut accumulators, row, ctx)
        })?;
        table.insert(RowKey(Vec::new()), accumulators);
    } else {
        let mut found = HashedGroups::default();
        input.for_each_row(ctx, &mut |row, ctx| {
            let key = eval_each(groups.iter(), row, ctx)?;
            let accumulators = found.entry(key, || calls.iter().map(Accumulator::new).collect());
            accumulate(calls, accumulators, row, ctx)
        })?;
        table.extend(found.groups.into_iter().map(|(key, a)| (RowKey(key), a)));
    }
    Ok(table)
}

/// The groups of a grouped aggregation as they are found: looked up by the hash of their key
/// ([`hashing::RowHasher`]: NULLs group together, as [`compare_rows`] has them), confirmed by
/// comparing keys. Sorted into [`Groups`] once at the end, instead of a sorted map searched per
/// row.
struct HashedGroups {
    hasher: hashing::RowHasher,
    /// Per hash, the last group found with it.
    last: HashMap<u64, usize, ahash::RandomState>,
    /// Per group, the group found before it with the same hash.
    earlier: Vec<Option<usize>>,
    groups: Vec<(Row, Vec<Accumulator>)>,
}

impl Default for HashedGroups {
    fn default() -> Self {
        HashedGroups {
            hasher: hashing::RowHasher::new(),
            last: HashMap::default(),
            earlier: Vec::new(),
            groups: Vec::new(),
        }
    }
}

impl HashedGroups {
    /// The accumulators of `key`'s group, made by `new` if it is new.
    fn entry(&mut self, key: Row, new: impl FnOnce() -> Vec<Accumulator>) -> &mut Vec<Accumulator> {
        let hash = self.hasher.hash(&key);
        let mut candidate = self.last.get(&hash).copied();
        while let Some(at) = candidate {
            if compare_rows(&self.groups[at].0, &key).is_eq() {
                return &mut self.groups[at].1;
            }
            candidate = self.earlier[at];
        }
        let at = self.groups.len();
        self.earlier.push(self.last.insert(hash, at));
        self.groups.push((key, new()));
        &mut self.groups[at].1
    }
}

/// One output row per group: its key, then its aggregates' values.
fn finish_groups(table: Groups, calls: &[AggCall]) -> Result<Vec<Row>> {
    let mut rows = Vec::with_capacity(table.len());
    for (RowKey(mut key), accumulators) in table {
        for (call, accumulator) in calls.iter().zip(accumulators) {
            key.push(accumulator.finish(call)?);
        }
        rows.push(key);
    }
    Ok(rows)
}

/// Every remaining row of `input`, owned as `next` gives them (compare [`drain`], which copies
/// lent rows).
fn rows_of(input: &mut BoxedSource, ctx: &mut ExecCtx) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    while let Some(row) = input.next(ctx)? {
        rows.push(row);
    }
    Ok(rows)
}

/// The positions of the row's columns the keys are, when every key is a plain column: the rows
/// then sort by their own values, with no key values computed (or cloned) per row.
fn column_keys(keys: &[SortKey]) -> Option<Vec<usize>> {
    keys.iter()
        .map(|key| match key.expr {
            Expr::Column(column) => Some(column),
            _ => None,
        })
        .collect()
}

fn sort_rows(mut rows: Vec<Row>, keys: &[SortKey], ctx: &mut ExecCtx) -> Result<Vec<Row>> {
    if let Some(columns) = column_keys(keys) {
        rows.sort_by(|a, b| compare_columns(a, b, &columns, keys));
        return Ok(rows);
    }
    let mut keyed = Vec::with_capacity(rows.len());
    for row in rows {
        let sort_values = eval_each(keys.iter().map(|k| &k.expr), &row, ctx)?;
        keyed.push((sort_values, row));
    }
    keyed.sort_by(|a, b| compare_by_keys(&a.0, &b.0, keys));
    Ok(keyed.into_iter().map(|(_, row)| row).collect())
}

fn compare_columns(a: &[Value], b: &[Value], columns: &[usize], keys: &[SortKey]) -> Ordering {
    columns
        .iter()
        .zip(keys)
        .map(|(&column, key)| compare_under_key(&a[column], &b[column], key))
        .find(|ordering| ordering.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// `Sort` over `Distinct` (SELECT DISTINCT ... ORDER BY). When the keys are plain columns that
/// cover the whole row, equal rows sort next to each other: the rows are sorted first and each
/// is kept unless it equals the one before (PostgreSQL's Unique over Sort), with no set of the
/// rows seen and no copy of them. Otherwise as the two nodes would: the first of each distinct
/// row, then the sort.
fn sort_distinct(input: &mut BoxedSource, keys: &[SortKey], ctx: &mut ExecCtx) -> Result<Vec<Row>> {
    let mut rows = rows_of(input, ctx)?;
    let width = rows.first().map_or(0, Vec::len);
    match column_keys(keys) {
        Some(columns) if (0..width).all(|c| columns.contains(&c)) => {
            rows.sort_by(|a, b| compare_columns(a, b, &columns, keys));
            rows.dedup_by(|row, before| compare_rows(row, before).is_eq());
            Ok(rows)
        }
        _ => {
            let mut seen = std::collections::BTreeSet::new();
            rows.retain(|row| seen.insert(RowKey(row.clone())));
            sort_rows(rows, keys, ctx)
        }
    }
}

/// `WITH RECURSIVE`'s union (see [`Plan::RecursiveUnion`]), round by round: the rows of one
/// round are given out before the next round runs over them.
struct RecursiveUnionSource<'p> {
    id: usize,
    recursive: &'p Plan,
    all: bool,
    /// Without ALL: every row given out so far.
    seen: BTreeMap<RowKey, ()>,
    /// This round's rows not yet given out.
    pending: std::collections::VecDeque<Row>,
    /// This round's rows given out: the next round's work table.
    given: Vec<Row>,
}

impl<'p> RecursiveUnionSource<'p> {
    fn new(
        id: usize,
        anchor: &Plan,
        recursive: &'p Plan,
        all: bool,
        ctx: &mut ExecCtx,
    ) -> Result<Self> {
        let mut source = RecursiveUnionSource {
            id,
            recursive,
            all,
            seen: BTreeMap::new(),
            pending: Default::default(),
            given: Vec::new(),
        };
        let rows = collect(anchor, ctx)?;
        source.add(rows);
        Ok(source)
    }

    /// Queues a round's rows: all of them, or without ALL those not given out before.
    fn add(&mut self, rows: Vec<Row>) {
        for row in rows {
            if self.all || self.seen.insert(RowKey(row.clone()), ()).is_none() {
                self.pending.push_back(row);
            }
        }
    }
}

impl Source for RecursiveUnionSource<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let Some(row) = self.pending.pop_front() {
                self.given.push(row.clone());
                return Ok(Some(row));
            }
            if self.given.is_empty() {
                return Ok(None);
            }
            ctx.check_interrupt()?;
            ctx.work_tables
                .insert(self.id, std::mem::take(&mut self.given));
            let round = collect(self.recursive, ctx);
            ctx.work_tables.remove(&self.id);
            self.add(round?);
        }
    }
}

/// Every remaining row of `source`, read lent (see [`Source::for_each_row`]) so that only the
/// rows kept are allocated.
fn drain(source: &mut BoxedSource, ctx: &mut ExecCtx) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    source.for_each_row(ctx, &mut |row, _| {
        rows.push(row.clone());
        Ok(())
    })?;
    Ok(rows)
}

fn set_operation(
    left: &mut BoxedSource,
    right: &mut BoxedSource,
    op: SetOpKind,
    all: bool,
    ctx: &mut ExecCtx,
) -> Result<Vec<Row>> {
    let left = drain(left, ctx)?;
    let right = drain(right, ctx)?;
    let mut counts: BTreeMap<RowKey, usize> = BTreeMap::new();
    for row in &right {
        *counts.entry(RowKey(row.clone())).or_default() += 1;
    }
    let rows: Vec<Row> = match op {
        SetOpKind::Union => left.into_iter().chain(right).collect(),
        SetOpKind::Intersect | SetOpKind::Except => {
            let keep_if_present = op == SetOpKind::Intersect;
            let mut out = Vec::new();
            for row in left {
                let count = counts.entry(RowKey(row.clone())).or_default();
                let present = *count > 0;
                if present && all {
                    *count -= 1;
                }
                if present == keep_if_present {
                    out.push(row);
                }
            }
            out
        }
    };
    if all {
        return Ok(rows);
    }
    let mut seen = BTreeMap::new();
    Ok(rows
        .into_iter()
        .filter(|r| seen.insert(RowKey(r.clone()), ()).is_none())
        .collect())
}

/// The [`Plan::ProjectSet`] node: each input row followed by its calls' rows (see
/// [`crate::execution::set_functions`]).
struct ProjectSetSource<'p> {
    input: BoxedSource<'p>,
    calls: &'p [SetCall],
    /// Rows of the current input row not given out yet.
    pending: std::collections::VecDeque<Row>,
}

impl Source for ProjectSetSource<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let Some(row) = self.pending.pop_front() {
                return Ok(Some(row));
            }
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            let mut sets = Vec::with_capacity(self.calls.len());
            for call in self.calls {
                let args = eval_each(call.args.iter(), &row, ctx)?;
                sets.push(call.function.values(&args)?);
            }
            let rows = sets.iter().map(Vec::len).max().unwrap_or(0);
            for at in 0..rows {
                let mut out = row.clone();
                out.extend(
                    sets.iter()
                        .map(|set| set.get(at).cloned().unwrap_or(Value::Null)),
                );
                self.pending.push_back(out);
            }
        }
    }
}
