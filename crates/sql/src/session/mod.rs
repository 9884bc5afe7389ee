//! Sessions: one client's connection state — its transaction block, savepoints, settings,
//! prepared statements and the plans of its statement templates (`templates`: a simple-query
//! statement seen before with other literals runs its kept plan) — and the dispatch of each
//! statement to the binder and executor.
//!
//! Transactions follow PostgreSQL: outside a block every statement commits on its own; inside
//! `BEGIN ... COMMIT` the engine transaction starts at the first statement that reads or writes
//! (so `SET TRANSACTION` can still choose its isolation level). After an error inside a block,
//! every statement but `ROLLBACK`, `COMMIT` (which then rolls back) and `ROLLBACK TO SAVEPOINT`
//! fails with 25P02. DDL is a write of the block's transaction like any other (the engine's DDL is
//! transactional): it commits or rolls back with the block, savepoints included. VACUUM is
//! refused inside a block (25001), as in PostgreSQL.

mod block;
mod cursor;
pub mod ddl;
pub mod dml;
pub mod explain;
mod lock;
mod roles;
mod templates;

use crate::execution::activity::{self, Activities, Peer, Registered, State};
use crate::execution::table_activity::TableActivity;
use crate::session::ddl::create_as::CreateAs;
use block::{apply_modes, convert_isolation};

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use sqlparser::ast;
use steady_engine::engine::{Engine, Isolation, Savepoint, Transaction};
use steady_types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::cancel::CancelHandle;
use crate::execution::executor::{now_micros, ExecCtx, Row, SessionInfo};
use crate::execution::plan::{Column, Plan};
use crate::execution::settings::Settings;
use crate::parser::{parse, Statement};
use crate::planner::bind::{Binder, BoundQuery};
use crate::planner::stats::Statistics;

/// A database: the engine and what every session shares.
/// The 42501 of maintenance commands for roles that are not superusers: every table belongs to
/// the bootstrap superuser (`execution::privileges`).
const OWNER_ONLY: &str =
    "permission denied: only a superuser, the owner of every table, may do this";
/// The 42501 of statements that create relations, for roles that are not superusers.
const CREATE_DENIED: &str = "permission denied for schema public";

pub struct Database {
    engine: Arc<Engine>,
    stats: Statistics,
    next_session: AtomicU32,
    name: String,
    activities: Arc<Activities>,
    table_activity: Arc<TableActivity>,
    /// Every statement's counters (`pg_stat_statements`).
    statement_stats: Arc<crate::execution::statements::StatementStats>,
    /// The settings a new session starts with (the built-in defaults, or the server's).
    settings: std::sync::RwLock<Settings>,
}

impl Database {
    pub fn new(engine: Arc<Engine>, name: &str) -> Arc<Database> {
        Arc::new(Database {
            engine,
            stats: Statistics::default(),
            next_session: AtomicU32::new(1),
            name: name.to_owned(),
            activities: Arc::default(),
            table_activity: Arc::default(),
            statement_stats: Arc::default(),
            settings: std::sync::RwLock::default(),
        })
    }

    /// Makes `value` the default of setting `name` for the sessions started from now on (a
    /// server setting); 42704 for an unknown setting, 22023 for a bad value.
    pub fn set_setting_default(&self, name: &str, value: &str) -> Result<()> {
        self.settings
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .set_default(name, value)
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    pub fn stats(&self) -> &Statistics {
        &self.stats
    }

    /// Every session's activity.
    pub fn activities(&self) -> &Arc<Activities> {
        &self.activities
    }

    /// A new session for `user`, inside this process.
    pub fn session(self: &Arc<Self>, user: &str) -> Session {
        let peer = Peer {
            user: user.to_owned(),
            ..Peer::default()
        };
        self.connect(&peer, None)
    }

    /// A new session for a client; `pid` names it (in `pg_stat_activity`, `pg_backend_pid()` and
    /// `pg_cancel_backend`) and must not be a live session's; `None` takes the next of the
    /// database's own numbers, which start at 1 (the wire server's start at 100,000).
    pub fn connect(self: &Arc<Self>, peer: &Peer, pid: Option<i32>) -> Session {
        let settings = self
            .settings
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        self.connect_with(peer, pid, settings)
    }

    /// The settings a client's session starts with: the server's, then the ones the client
    /// asked for when it connected (`requested`: PostgreSQL's startup-packet parameters and
    /// `options` switches), which also become what RESET returns to. 42704 names an unknown
    /// setting, 22023 a bad value, 55P02 one a session cannot change.
    pub fn session_settings(&self, requested: &[(String, String)]) -> Result<Settings> {
        let mut settings = self
            .settings
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        for (name, value) in requested {
            settings.set_default(name, value)?;
        }
        Ok(settings)
    }

    /// [`Database::connect`] with the `settings` of [`Database::session_settings`].
    pub fn connect_with(
        self: &Arc<Self>,
        peer: &Peer,
        pid: Option<i32>,
        mut settings: Settings,
    ) -> Session {
        let pid = pid.unwrap_or_else(|| self.next_session.fetch_add(1, Ordering::Relaxed) as i32);
        let cancel = CancelHandle::default();
        let registered = self
            .activities
            .register(pid, peer, cancel.clone(), now_micros());
        if !peer.application_name.is_empty() {
            let _ = settings.set("application_name", &peer.application_name);
        }
        // A catalog that cannot be read names no superuser: the session then has no rights.
        let role = match self.engine().role(&peer.user) {
            Ok(found) => found.map(|r| r.name),
            Err(_) => Some(peer.user.clone()),
        };
        Session {
            db: Arc::clone(self),
            info: SessionInfo {
                id: pid as u32,
                user: peer.user.clone(),
                role: role.clone(),
                session_role: role,
                database: self.name.clone(),
                settings,
                cancel,
                activities: Some(Arc::clone(&self.activities)),
                sequences: Arc::default(),
                random: Arc::default(),
                table_activity: Some(Arc::clone(&self.table_activity)),
                statement_stats: Some(Arc::clone(&self.statement_stats)),
                pending_counts: Arc::default(),
                set_config_changes: Arc::default(),
                foreign_key_checks: Arc::default(),
            },
            block: None,
            prepared: HashMap::new(),
            templates: templates::Templates::default(),
            registered,
            xact_start: None,
            cursors: HashMap::new(),
            counted_text: None,
        }
    }
}

/// A notice or warning sent along with a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub severity: &'static str,
    pub code: &'static str,
    pub message: String,
    pub detail: Option<String>,
}

/// The outcome of one statement.
#[derive(Debug, Clone, Default)]
pub struct QueryResult {
    /// The command tag (`SELECT 3`, `INSERT 0 1`, `BEGIN`...).
    pub tag: String,
    /// The result columns; empty for statements that return no rows.
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
    pub notices: Vec<Notice>,
    /// Parameters the statement changed that a client is told of (ParameterStatus): PostgreSQL's
    /// GUC_REPORT ones, such as TimeZone and application_name.
    pub reported: Vec<(&'static str, String)>,
}

impl QueryResult {
    pub fn command(tag: impl Into<String>) -> Self {
        QueryResult {
            tag: tag.into(),
            ..QueryResult::default()
        }
    }

    pub fn rows(tag: impl Into<String>, columns: Vec<Column>, rows: Vec<Row>) -> Self {
        QueryResult {
            tag: tag.into(),
            columns,
            rows,
            ..QueryResult::default()
        }
    }

    pub fn with_notice(
        mut self,
        severity: &'static str,
        code: &'static str,
        message: impl Into<String>,
    ) -> Self {
        self.notices.push(Notice {
            severity,
            code,
            message: message.into(),
            detail: None,
        });
        self
    }

    /// [`QueryResult::with_notice`] with a DETAIL line.
    pub fn with_notice_detail(
        mut self,
        severity: &'static str,
        code: &'static str,
        message: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        self.notices.push(Notice {
            severity,
            code,
            message: message.into(),
            detail: Some(detail.into()),
        });
        self
    }

    /// Whether the statement returns rows (a SELECT, or RETURNING).
    pub fn has_rows(&self) -> bool {
        !self.columns.is_empty()
    }
}

/// A statement prepared for repeated execution.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub statement: Statement,
    /// The statement's text, as the client sent it.
    pub text: Arc<str>,
    /// The parameter types, declared or inferred (`None`: unknown, sent as text).
    pub params: Vec<Option<DataType>>,
    /// The result columns.
    pub columns: Vec<Column>,
    /// A query's or a write's plan, bound at its first execution and kept while the catalog and the statistics
    /// it was bound against are unchanged: later executions only run it (a generic plan, as
    /// PostgreSQL's; parameters are evaluated when the plan runs).
    plan: Arc<Mutex<Option<Arc<CachedPlan>>>>,
    /// Its INSERT may give GENERATED ALWAYS columns values (COPY FROM's).
    overriding_system_value: bool,
}

#[derive(Debug)]
struct CachedPlan {
    query: BoundQuery,
    catalog: u64,
    stats: u64,
}

impl Prepared {
    fn new(
        statement: Statement,
        text: &str,
        params: Vec<Option<DataType>>,
        columns: Vec<Column>,
    ) -> Self {
        Prepared {
            statement,
            text: Arc::from(text),
            params,
            columns,
            plan: Arc::default(),
            overriding_system_value: false,
        }
    }

    /// The statement, if it is a query or a write (a plan can be kept for it).
    fn planned(&self) -> Option<&ast::Statement> {
        match &self.statement {
            Statement::Sql(sql) => match sql.as_ref() {
                ast::Statement::Query(_)
                | ast::Statement::Insert(_)
                | ast::Statement::Update(_)
                | ast::Statement::Delete(_) => Some(sql),
                _ => None,
            },
            _ => None,
        }
    }

    /// The kept plan if it is still valid, else the one `bind` makes (then kept).
    fn plan(
        &self,
        stats: u64,
        bind: impl FnOnce() -> Result<BoundQuery>,
    ) -> Result<Arc<CachedPlan>> {
        let catalog = steady_engine::catalog::generation();
        let mut kept = self.plan.lock();
        if let Some(plan) = kept
            .as_ref()
            .filter(|p| p.catalog == catalog && p.stats == stats)
        {
            return Ok(Arc::clone(plan));
        }
        let plan = Arc::new(CachedPlan {
            query: bind()?,
            catalog,
            stats,
        });
        *kept = Some(Arc::clone(&plan));
        Ok(plan)
    }
}

/// An open transaction block.
struct Block {
    txn: Option<Transaction>,
    isolation: Isolation,
    read_only: bool,
    failed: bool,
    /// Each savepoint, with how far the deferred foreign-key checks had grown at it.
    savepoints: Vec<(String, Savepoint, crate::execution::fk_checks::Mark)>,
}

/// One client's session.
pub struct Session {
    db: Arc<Database>,
    info: SessionInfo,
    block: Option<Block>,
    prepared: HashMap<String, Prepared>,
    /// Kept plans of simple-query statement templates.
    templates: templates::Templates,
    /// The session's record in `pg_stat_activity`.
    registered: Registered,
    /// When the current transaction (block or statement) started.
    xact_start: Option<i64>,
    /// The declared cursors, by name.
    cursors: HashMap<String, cursor::Cursor>,
    /// The text the running statement counts under in `pg_stat_statements` when not the text
    /// sent: its template's (literals as `$n`), set when it runs as a template.
    counted_text: Option<Arc<str>>,
}

impl Drop for Session {
    /// Adds the session's pending table counts to the database's.
    fn drop(&mut self) {
        self.info.pending_counts.flush_into(&self.db.table_activity);
    }
}

/// The rows a statement's result returned or changed, for `pg_stat_statements`.
trait RowCount {
    fn rows(&self) -> u64;
}

impl RowCount for QueryResult {
    fn rows(&self) -> u64 {
        let counted = self.tag.rsplit(' ').next().and_then(|n| n.parse().ok());
        counted.unwrap_or(self.rows.len() as u64)
    }
}

impl<T: RowCount> RowCount for Result<T> {
    fn rows(&self) -> u64 {
        self.as_ref().map_or(0, RowCount::rows)
    }
}

impl<T: RowCount> RowCount for Vec<T> {
    fn rows(&self) -> u64 {
        self.iter().map(RowCount::rows).sum()
    }
}

/// The transaction status a client sees (ReadyForQuery).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionStatus {
    Idle,
    InBlock,
    Failed,
}

impl Session {
    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    pub fn info(&self) -> &SessionInfo {
        &self.info
    }

    pub fn settings(&self) -> &Settings {
        &self.info.settings
    }

    /// The columns a COPY of table `schema.name` reads or writes when it names none: every
    /// column but the generated ones, as PostgreSQL's COPY. None when no such table exists (the
    /// COPY's own statement then says why).
    pub fn copy_columns(&self, schema: Option<&str>, name: &str) -> Option<Vec<String>> {
        if !matches!(schema, None | Some("public")) {
            return None;
        }
        let table = self.db.engine().table(name)?;
        let copied = table.columns.iter().filter(|c| {
            c.generated.is_none() && !crate::execution::constraints::is_hidden(&c.name)
        });
        Some(copied.map(|c| c.name.clone()).collect())
    }

    pub fn transaction_status(&self) -> TransactionStatus {
        match &self.block {
            None => TransactionStatus::Idle,
            Some(b) if b.failed => TransactionStatus::Failed,
            Some(_) => TransactionStatus::InBlock,
        }
    }

    /// Runs every statement of `sql` in order, stopping at the first error (which ends the list).
    pub fn execute(&mut self, sql: &str) -> Vec<Result<QueryResult>> {
        self.tracked(Arc::from(sql), |session| session.execute_untracked(sql))
    }

    fn execute_untracked(&mut self, sql: &str) -> Vec<Result<QueryResult>> {
        if let Some(result) = self.execute_template(sql) {
            return vec![result];
        }
        let statements = match self.templates.parse(sql) {
            Ok(statements) => statements,
            Err(err) => {
                self.fail_block();
                return vec![Err(err)];
            }
        };
        let mut results = Vec::with_capacity(statements.len());
        for statement in &statements {
            let result = self.run(statement, &[]);
            let failed = result.is_err();
            results.push(result);
            if failed {
                break;
            }
        }
        results
    }

    /// Parses one statement and types its parameters and result (the extended protocol's Parse).
    pub fn prepare(&mut self, sql: &str, declared: &[Option<DataType>]) -> Result<Prepared> {
        self.prepare_overriding(sql, declared, false)
    }

    /// Prepares the INSERT that COPY FROM loads rows through: as `prepare`, but the rows may
    /// give values to GENERATED ALWAYS identity columns (PostgreSQL's COPY may, as an INSERT
    /// ... OVERRIDING SYSTEM VALUE may; pg_dump's output relies on it).
    pub fn prepare_copy_insert(
        &mut self,
        sql: &str,
        declared: &[Option<DataType>],
    ) -> Result<Prepared> {
        self.prepare_overriding(sql, declared, true)
    }

    fn prepare_overriding(
        &mut self,
        sql: &str,
        declared: &[Option<DataType>],
        overriding_system_value: bool,
    ) -> Result<Prepared> {
        self.apply_date_settings();
        let mut statements = parse(sql).inspect_err(|_| self.fail_block())?;
        if statements.len() > 1 {
            return Err(SqlError::syntax(
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        let statement = statements.pop().unwrap_or(Statement::Empty);
        let (params, columns) = self
            .describe_overriding(&statement, declared.to_vec(), overriding_system_value)
            .inspect_err(|_| self.fail_block())?;
        let mut prepared = Prepared::new(statement, sql, params, columns);
        prepared.overriding_system_value = overriding_system_value;
        Ok(prepared)
    }

    /// Runs a prepared statement with parameter values. A query or a write runs its kept plan.
    pub fn execute_prepared(
        &mut self,
        prepared: &Prepared,
        params: &[Value],
    ) -> Result<QueryResult> {
        self.tracked(Arc::clone(&prepared.text), |session| {
            session.execute_prepared_untracked(prepared, params)
        })
    }

    /// Runs a prepared one-row `INSERT ... VALUES ($1, …)` once for each row of `rows`, as one
    /// statement (COPY FROM's batches): each row gives the parameters' values in order and is
    /// moved into the table row, never cloned. Any other statement is refused (XX000).
    pub fn execute_prepared_rows(
        &mut self,
        prepared: &Prepared,
        rows: Vec<Vec<Value>>,
    ) -> Result<QueryResult> {
        self.tracked(Arc::clone(&prepared.text), |session| {
            let Some(statement) = prepared.planned() else {
                return Err(crate::execution::write::not_a_parameter_row());
            };
            session.guarded(&prepared.statement, |session| {
                session.in_transaction(|session, txn| {
                    session.run_prepared_plan(prepared, statement, txn, &[], Some(rows))
                })
            })
        })
    }

    /// `result` with the reported parameters whose values differ from `before`.
    fn with_reported(
        &self,
        mut result: QueryResult,
        before: Vec<(&'static str, String)>,
    ) -> QueryResult {
        let after = self.info.settings.reported();
        result.reported = after.into_iter().filter(|p| !before.contains(p)).collect();
        result
    }

    /// Makes the TimeZone setting this thread's zone for `timestamptz` input and output (see
    /// `steady_types::zone`), and DateStyle's order the one it reads numeric dates in: before
    /// each statement, and after a SET or RESET.
    fn apply_date_settings(&self) {
        steady_types::zone::use_session_zone(self.info.settings.timezone());
        steady_types::use_date_order(self.info.settings.date_order());
    }

    /// Copies `application_name` into the session's activity (after a SET or RESET).
    fn show_application_name(&self) {
        let name = self
            .info
            .settings
            .show("application_name")
            .unwrap_or_default();
        self.registered.activity().set_application_name(&name);
    }

    /// Runs `run` (the statements of `query`) as the session's activity.
    fn tracked<T: RowCount>(&mut self, query: Arc<str>, run: impl FnOnce(&mut Self) -> T) -> T {
        self.apply_date_settings();
        let now = now_micros();
        let xact_start = *self.xact_start.get_or_insert(now);
        steady_types::zone::set_transaction_time(xact_start);
        let activity = Arc::clone(self.registered.activity());
        self.info.cancel.arm();
        let slow_log = self
            .info
            .settings
            .log_min_duration()
            .map(|threshold| (threshold, Arc::clone(&query)));
        let sent = Arc::clone(&query);
        activity.statement_started(query, now, xact_start);
        let result = run(self);
        let state = match self.transaction_status() {
            TransactionStatus::Idle => State::Idle,
            TransactionStatus::InBlock => State::IdleInTransaction,
            TransactionStatus::Failed => State::IdleInTransactionAborted,
        };
        if state == State::Idle {
            self.xact_start = None;
        }
        let ended = now_micros();
        activity.statement_ended(state, ended);
        let elapsed = ended.saturating_sub(now).max(0) as u64;
        let counted = self.counted_text.take().unwrap_or(sent);
        let user = self.info.role.as_deref().unwrap_or(&self.info.user);
        self.db
            .statement_stats
            .record(user, counted, elapsed, result.rows());
        if let Some((threshold, query)) = slow_log {
            self.log_if_slow(&query, ended.saturating_sub(now), threshold);
        }
        if let Some(shared) = &self.info.table_activity {
            self.info.pending_counts.flush_if_due(shared);
        }
        result
    }

    /// Logs `query`, which took `micros`, when that reaches `threshold`
    /// (`log_min_duration_statement` when it started), as PostgreSQL's `duration: ... ms
    /// statement: ...` line.
    fn log_if_slow(&self, query: &str, micros: i64, threshold: std::time::Duration) {
        if micros < 0 || (micros as u128) < threshold.as_micros() {
            return;
        }
        let duration_ms = micros as f64 / 1000.0;
        tracing::info!(
            target: "steady::statement",
            duration_ms,
            user = %self.info.user,
            pid = self.info.id,
            "duration: {duration_ms:.3} ms  statement: {query}"
        );
    }

    fn execute_prepared_untracked(
        &mut self,
        prepared: &Prepared,
        params: &[Value],
    ) -> Result<QueryResult> {
        match prepared.planned() {
            Some(statement) => self.guarded(&prepared.statement, |session| {
                session.execute_planned(prepared, statement, params)
            }),
            None => self.run_with_types(&prepared.statement, params, prepared.params.clone()),
        }
    }

    /// Runs a prepared query or write (`statement`) by its kept plan; the caller guards the block.
    fn execute_planned(
        &mut self,
        prepared: &Prepared,
        statement: &ast::Statement,
        params: &[Value],
    ) -> Result<QueryResult> {
        self.in_transaction(|session, txn| {
            session.run_prepared_plan(prepared, statement, txn, params, None)
        })
    }

    /// Runs a prepared statement's kept plan with `params`, or with `param_rows` (see
    /// [`Session::execute_prepared_rows`]).
    fn run_prepared_plan(
        &self,
        prepared: &Prepared,
        statement: &ast::Statement,
        txn: &mut Transaction,
        params: &[Value],
        param_rows: Option<Vec<Vec<Value>>>,
    ) -> Result<QueryResult> {
        self.check_writable(statement)?;
        let plan = prepared.plan(self.db.stats().epoch(), || {
            let mut binder =
                Binder::new(self.db.engine(), self.db.stats(), prepared.params.clone())
                    .for_transaction(txn);
            binder.overriding_system_value = prepared.overriding_system_value;
            binder
                .bind_statement(statement)?
                .ok_or_else(|| SqlError::new("XX000", "a prepared statement without a plan"))
        })?;
        let engine = Arc::clone(self.db.engine());
        let mut ctx = ExecCtx::new(Some(engine), Some(txn), params, &self.info);
        if let Some(rows) = param_rows {
            let Plan::Insert(insert) = &plan.query.plan else {
                return Err(crate::execution::write::not_a_parameter_row());
            };
            insert.parameter_types()?;
            ctx.set_param_rows(rows);
        }
        crate::session::dml::run_query(&plan.query, &mut ctx)
    }

    fn run(&mut self, statement: &Statement, params: &[Value]) -> Result<QueryResult> {
        self.run_with_types(statement, params, Vec::new())
    }

    fn run_with_types(
        &mut self,
        statement: &Statement,
        params: &[Value],
        types: Vec<Option<DataType>>,
    ) -> Result<QueryResult> {
        self.guarded(statement, |session| {
            session.dispatch(statement, params, types)
        })
    }

    /// Runs `statement` by `run` unless the block has failed (25P02), and fails the block if it
    /// fails.
    fn guarded(
        &mut self,
        statement: &Statement,
        run: impl FnOnce(&mut Self) -> Result<QueryResult>,
    ) -> Result<QueryResult> {
        if self.block.as_ref().is_some_and(|b| b.failed) && !allowed_when_failed(statement) {
            return Err(SqlError::new(
                "25P02",
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        let result = run(self);
        let changes = std::mem::take(&mut *self.info.set_config_changes.lock());
        if result.is_err() {
            self.fail_block();
            return result;
        }
        if changes.is_empty() {
            return result;
        }
        let before = self.info.settings.reported();
        for (name, value) in &changes {
            self.info.settings.set(name, value)?;
        }
        self.show_application_name();
        self.apply_date_settings();
        result.map(|r| self.with_reported(r, before))
    }

    /// Marks the open block failed (an error happened inside it, here or in the caller, e.g. the
    /// wire server decoding a parameter): statements then fail with 25P02 until ROLLBACK.
    pub fn fail_block(&mut self) {
        if let Some(block) = self.block.as_mut() {
            block.failed = true;
        }
    }

    fn dispatch(
        &mut self,
        statement: &Statement,
        params: &[Value],
        types: Vec<Option<DataType>>,
    ) -> Result<QueryResult> {
        let sql = match statement {
            Statement::Sql(sql) => sql.as_ref(),
            Statement::Vacuum {
                full,
                analyze,
                tables,
            } => {
                self.require_superuser(OWNER_ONLY)?;
                return self.vacuum(*full, *analyze, tables);
            }
            Statement::Analyze { tables } => {
                self.require_superuser(OWNER_ONLY)?;
                return self.analyze(tables);
            }
            Statement::Checkpoint => {
                self.require_superuser("must be superuser to do CHECKPOINT")?;
                return self.checkpoint();
            }
            Statement::CreateMaterializedView { create, with_data } => {
                let ast::Statement::CreateView(create) = create.as_ref() else {
                    return Err(SqlError::syntax("CREATE MATERIALIZED VIEW ... AS query"));
                };
                self.check_ddl_writable()?;
                return self.create_materialized_view(create, *with_data);
            }
            Statement::RefreshMaterializedView {
                name,
                concurrently,
                with_data,
            } => {
                self.check_ddl_writable()?;
                return self.refresh_materialized_view(name, *concurrently, *with_data);
            }
            Statement::SetConstraints { names, deferred } => {
                return self.set_constraints(names.as_deref(), *deferred);
            }
            Statement::AlterSequenceOwnedBy {
                if_exists,
                sequence,
                owner,
            } => {
                self.require_superuser(&format!("must be owner of sequence {sequence}"))?;
                let owner = owner.as_ref().map(|(t, c)| (t.as_str(), c.as_str()));
                return ddl::sequence::owned_by(self.db.engine(), *if_exists, sequence, owner);
            }
            Statement::AlterTypeOwner { name, owner } => {
                self.require_superuser(&format!("must be owner of type {name}"))?;
                if self.db.engine().enum_type(name)?.is_none() {
                    return Err(SqlError::new(
                        "42704",
                        format!("type \"{name}\" does not exist"),
                    ));
                }
                ddl::check_new_owner(self, self.db.engine(), owner)?;
                return Ok(QueryResult::command("ALTER TYPE"));
            }
            Statement::InsertOverriding { insert, system } => {
                return self.in_transaction(|session, txn| {
                    session.execute_dml(insert, txn, params, types, Some(*system))
                });
            }
            Statement::Empty => return Ok(QueryResult::command("")),
        };
        use ast::Statement as S;
        match sql {
            S::StartTransaction { modes, .. } => self.begin(modes),
            S::Commit { .. } => self.commit(),
            S::Rollback {
                savepoint: None, ..
            } => self.rollback(),
            S::Rollback {
                savepoint: Some(name),
                ..
            } => self.rollback_to(&crate::types::normalize_ident(name)),
            S::Savepoint { name } => self.savepoint(&crate::types::normalize_ident(name)),
            S::ReleaseSavepoint { name } => self.release(&crate::types::normalize_ident(name)),
            S::Lock(lock) => self.lock_tables(lock),
            S::Set(set) => {
                let before = self.info.settings.reported();
                let result = self.set(set);
                self.show_application_name();
                self.apply_date_settings();
                result.map(|r| self.with_reported(r, before))
            }
            S::ShowVariable { variable } => self.show(variable),
            S::Reset(reset) => {
                let before = self.info.settings.reported();
                match &reset.reset {
                    ast::Reset::ALL => self.info.settings.reset(None)?,
                    ast::Reset::ConfigurationParameter(name)
                        if crate::types::object_name(name).1 == "role" =>
                    {
                        self.set_role(None)?;
                    }
                    ast::Reset::ConfigurationParameter(name) => self
                        .info
                        .settings
                        .reset(Some(&crate::types::object_name(name).1))?,
                    ast::Reset::SessionAuthorization => {}
                }
                self.show_application_name();
                self.apply_date_settings();
                Ok(self.with_reported(QueryResult::command("RESET"), before))
            }
            S::Prepare {
                name,
                data_types,
                statement,
            } => self.sql_prepare(name, data_types, statement),
            S::Execute {
                name, parameters, ..
            } => self.sql_execute(name.as_ref(), parameters),
            S::Deallocate { name, .. } => self.deallocate(&crate::types::normalize_ident(name)),
            S::Declare { stmts } => self.declare_cursor(stmts, params, types),
            S::Fetch {
                name, direction, ..
            } => self.fetch(name, direction),
            S::Close { cursor } => self.close_cursor(cursor),
            S::Discard { .. } => {
                self.prepared.clear();
                self.templates.clear();
                self.cursors.clear();
                Ok(QueryResult::command("DISCARD ALL"))
            }
            S::CreateTable(
                create @ ast::CreateTable {
                    query: Some(query), ..
                },
            ) => {
                self.require_superuser(CREATE_DENIED)?;
                self.create_table_as(CreateAs::from_create(create, query)?)
            }
            S::Query(query) if query_into(query).is_some() => {
                self.require_superuser(CREATE_DENIED)?;
                let into = query_into(query).cloned();
                let mut stripped = query.as_ref().clone();
                if let ast::SetExpr::Select(select) = stripped.body.as_mut() {
                    select.into = None;
                }
                match into {
                    Some(into) => {
                        self.create_table_as(CreateAs::from_select_into(&into, &stripped)?)
                    }
                    None => Err(SqlError::new("XX000", "SELECT INTO without INTO")),
                }
            }
            S::CreateRole(_) | S::AlterRole { .. } | S::Grant(_) | S::Revoke(_) => {
                self.check_ddl_writable()?;
                self.in_transaction(|session, txn| session.role_statement(txn, sql))
            }
            S::Drop {
                object_type: ast::ObjectType::Role | ast::ObjectType::User,
                names,
                if_exists,
                ..
            } => {
                self.check_ddl_writable()?;
                self.in_transaction(|session, txn| session.drop_roles(txn, names, *if_exists))
            }
            statement if crate::session::ddl::is_ddl(statement) => {
                self.check_ddl_writable()?;
                self.check_ddl_allowed(statement)?;
                let db = Arc::clone(&self.db);
                self.in_transaction(|session, txn| {
                    crate::session::ddl::execute(&db, session, txn, statement)
                })
            }
            statement => self.in_transaction(|session, txn| {
                session.execute_dml(statement, txn, params, types, None)
            }),
        }
    }

    /// Runs `f` in the block's transaction (started if needed), or in a transaction of its own.
    fn in_transaction(
        &mut self,
        f: impl FnOnce(&Session, &mut Transaction) -> Result<QueryResult>,
    ) -> Result<QueryResult> {
        let engine = Arc::clone(self.db.engine());
        if self.block.is_none() {
            // The foreign-key state is empty here: every transaction end clears it.
            let mut txn = engine.begin(self.info.settings.default_isolation())?;
            let result = self.run_statement(&engine, &mut txn, f).and_then(|result| {
                self.run_deferred_checks(&engine, &mut txn)?;
                Ok(result)
            });
            self.info.foreign_key_checks.lock().clear();
            return match result {
                Ok(result) => {
                    txn.commit()?;
                    Ok(result)
                }
                Err(err) => {
                    txn.rollback()?;
                    Err(err)
                }
            };
        }
        let mut txn = self.take_block_txn(&engine)?;
        let result = self.run_statement(&engine, &mut txn, f);
        if let Some(block) = self.block.as_mut() {
            block.txn = Some(txn);
        }
        result
    }

    /// Runs one statement in `txn`, cancellable through [`Session::cancel_handle`].
    fn run_statement(
        &self,
        engine: &Arc<Engine>,
        txn: &mut Transaction,
        f: impl FnOnce(&Session, &mut Transaction) -> Result<QueryResult>,
    ) -> Result<QueryResult> {
        txn.begin_statement();
        txn.set_lock_timeout(self.info.settings.timeout("lock_timeout"));
        self.activity().in_transaction(txn.id());
        let timeout = self.info.settings.timeout("statement_timeout");
        txn.set_statement_deadline(timeout.map(|t| std::time::Instant::now() + t));
        self.info.cancel.start(engine, txn.id(), timeout);
        let result = f(self, txn).and_then(|result| {
            let checks = self.info.foreign_key_checks.lock().take_statement();
            self.run_checks(engine, txn, checks)?;
            Ok(result)
        });
        if result.is_err() {
            self.info.foreign_key_checks.lock().clear_statement();
        }
        let result = result.map_err(|err| self.info.cancel.explain(err));
        self.info.cancel.finish();
        result
    }

    /// Makes the foreign-key checks left for later again (`execution::fk_checks`).
    fn run_checks(
        &self,
        engine: &Arc<Engine>,
        txn: &mut Transaction,
        checks: Vec<crate::execution::fk_checks::PendingCheck>,
    ) -> Result<()> {
        if checks.is_empty() {
            return Ok(());
        }
        let mut ctx = ExecCtx::new(Some(Arc::clone(engine)), Some(txn), &[], &self.info);
        crate::execution::fk_checks::run_checks(&mut ctx, checks)
    }

    /// The transaction's deferred foreign-key checks, made as it commits — under READ
    /// COMMITTED with a new snapshot, as a statement of their own would see the rows (a parent
    /// another session committed since counts).
    fn run_deferred_checks(&self, engine: &Arc<Engine>, txn: &mut Transaction) -> Result<()> {
        let checks = self.info.foreign_key_checks.lock().take_deferred();
        if !checks.is_empty() {
            txn.begin_statement();
        }
        self.run_checks(engine, txn, checks)
    }

    /// The session's record in `pg_stat_activity` (its pid, and whether it was terminated).
    pub fn activity(&self) -> &Arc<activity::Activity> {
        self.registered.activity()
    }

    /// A handle another thread can use to stop this session's running statement.
    pub fn cancel_handle(&self) -> CancelHandle {
        self.info.cancel.clone()
    }

    fn take_block_txn(&mut self, engine: &Arc<Engine>) -> Result<Transaction> {
        let block = self.block.as_mut().expect("inside a block");
        match block.txn.take() {
            Some(txn) => Ok(txn),
            None => Ok(engine.begin(block.isolation)?),
        }
    }

    /// Binds and runs a query or DML statement in `txn`; an INSERT with `overriding`
    /// `Some(true)` is OVERRIDING SYSTEM VALUE, with `Some(false)` OVERRIDING USER VALUE.
    fn execute_dml(
        &self,
        statement: &ast::Statement,
        txn: &mut Transaction,
        params: &[Value],
        types: Vec<Option<DataType>>,
        overriding: Option<bool>,
    ) -> Result<QueryResult> {
        self.check_writable(statement)?;
        let mut binder = Binder::new(self.db.engine(), self.db.stats(), types).for_transaction(txn);
        binder.overriding_system_value = overriding == Some(true);
        binder.overriding_user_value = overriding == Some(false);
        let engine = Arc::clone(self.db.engine());
        let mut ctx = ExecCtx::new(Some(engine), Some(txn), params, &self.info);
        crate::session::dml::execute(&mut binder, &mut ctx, statement)
    }

    /// Refuses DDL inside a READ ONLY transaction block (25006).
    fn check_ddl_writable(&self) -> Result<()> {
        if self.block.as_ref().is_some_and(|b| b.read_only) {
            return Err(SqlError::new(
                "25006",
                "cannot execute DDL in a read-only transaction",
            ));
        }
        Ok(())
    }

    /// Refuses a write inside a READ ONLY transaction block (25006).
    fn check_writable(&self, statement: &ast::Statement) -> Result<()> {
        if self.block.as_ref().is_some_and(|b| b.read_only)
            && crate::session::dml::writes(statement)
        {
            return Err(SqlError::new(
                "25006",
                "cannot execute statement in a read-only transaction",
            ));
        }
        Ok(())
    }

    /// Parameter and result types of a statement without running it.
    fn describe(
        &self,
        statement: &Statement,
        declared: Vec<Option<DataType>>,
    ) -> Result<(Vec<Option<DataType>>, Vec<Column>)> {
        self.describe_overriding(statement, declared, false)
    }

    fn describe_overriding(
        &self,
        statement: &Statement,
        declared: Vec<Option<DataType>>,
        overriding_system_value: bool,
    ) -> Result<(Vec<Option<DataType>>, Vec<Column>)> {
        let Statement::Sql(sql) = statement else {
            return Ok((declared, vec![]));
        };
        if let ast::Statement::Fetch { name, .. } = sql.as_ref() {
            return Ok((declared, self.cursor_columns(name)?));
        }
        let mut binder = Binder::new(self.db.engine(), self.db.stats(), declared);
        binder.overriding_system_value = overriding_system_value;
        let columns = crate::session::dml::describe(&mut binder, sql)?;
        Ok((binder.params, columns))
    }

    // -----------------------------------------------------------------------------------------
    // Transaction control
    // -----------------------------------------------------------------------------------------

    // -----------------------------------------------------------------------------------------
    // Settings
    // -----------------------------------------------------------------------------------------

    fn set(&mut self, set: &ast::Set) -> Result<QueryResult> {
        match set {
            ast::Set::SetTransaction { modes, session, .. } => {
                if *session {
                    for mode in modes {
                        if let ast::TransactionMode::IsolationLevel(level) = mode {
                            self.info.settings.set(
                                "default_transaction_isolation",
                                isolation_name(convert_isolation(level)),
                            )?;
                        }
                    }
                    return Ok(QueryResult::command("SET"));
                }
                let Some(block) = self.block.as_mut() else {
                    return Ok(QueryResult::command("SET").with_notice(
                        "WARNING",
                        "25P01",
                        "SET TRANSACTION can only be used in transaction blocks",
                    ));
                };
                if block.txn.is_some() {
                    return Err(SqlError::new(
                        "25001",
                        "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                    ));
                }
                apply_modes(block, modes);
                Ok(QueryResult::command("SET"))
            }
            ast::Set::SingleAssignment {
                variable, values, ..
            } => {
                let name = crate::types::object_name(variable).1;
                let value = setting_value(values)?;
                self.info.settings.set(&name, &value)?;
                Ok(QueryResult::command("SET"))
            }
            ast::Set::SetTimeZone { value, .. } => {
                let value = setting_value(std::slice::from_ref(value))?;
                self.info.settings.set("timezone", &value)?;
                Ok(QueryResult::command("SET"))
            }
            ast::Set::SetRole {
                context_modifier,
                role_name,
            } => {
                if matches!(context_modifier, Some(ast::ContextModifier::Local)) {
                    return Err(SqlError::unsupported("SET LOCAL ROLE"));
                }
                self.set_role(role_name.as_ref())
            }
            ast::Set::SetNames { charset_name, .. } => {
                self.info
                    .settings
                    .set("client_encoding", &charset_name.value)?;
                Ok(QueryResult::command("SET"))
            }
            other => Err(SqlError::unsupported(format!("{other}"))),
        }
    }

    fn show(&self, variable: &[ast::Ident]) -> Result<QueryResult> {
        let name: Vec<String> = variable.iter().map(crate::types::normalize_ident).collect();
        let name = name.join(" ");
        let value = match name.as_str() {
            "transaction isolation level" | "transaction_isolation" => {
                let level = self
                    .block
                    .as_ref()
                    .map_or(self.info.settings.default_isolation(), |b| b.isolation);
                isolation_name(level).to_owned()
            }
            other => self.info.settings.show(other)?,
        };
        let column_name = if name == "transaction isolation level" {
            "transaction_isolation".to_owned()
        } else {
            name
        };
        Ok(QueryResult::rows(
            "SHOW",
            vec![Column::new(column_name, Some(DataType::Text))],
            vec![vec![Value::Text(value)]],
        ))
    }

    // -----------------------------------------------------------------------------------------
    // PREPARE / EXECUTE / DEALLOCATE
    // -----------------------------------------------------------------------------------------

    fn sql_prepare(
        &mut self,
        name: &ast::Ident,
        data_types: &[ast::DataType],
        statement: &ast::Statement,
    ) -> Result<QueryResult> {
        let name = crate::types::normalize_ident(name);
        if self.prepared.contains_key(&name) {
            return Err(SqlError::new(
                "42P05",
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        let declared = data_types
            .iter()
            .map(|t| crate::types::convert_type_in(t, self.db.engine()).map(Some))
            .collect::<Result<Vec<_>>>()?;
        let text = statement.to_string();
        let statement = Statement::Sql(Box::new(statement.clone()));
        let (params, columns) = self.describe(&statement, declared)?;
        self.prepared
            .insert(name, Prepared::new(statement, &text, params, columns));
        Ok(QueryResult::command("PREPARE"))
    }

    fn sql_execute(
        &mut self,
        name: Option<&ast::ObjectName>,
        parameters: &[ast::Expr],
    ) -> Result<QueryResult> {
        let name = name
            .map(|n| crate::types::object_name(n).1)
            .unwrap_or_default();
        let prepared = self.prepared.get(&name).cloned().ok_or_else(|| {
            SqlError::new(
                "26000",
                format!("prepared statement \"{name}\" does not exist"),
            )
        })?;
        let mut binder = Binder::new(self.db.engine(), self.db.stats(), Vec::new());
        let mut values = Vec::with_capacity(parameters.len());
        for (i, parameter) in parameters.iter().enumerate() {
            let ty = prepared
                .params
                .get(i)
                .copied()
                .flatten()
                .unwrap_or(DataType::Text);
            let (expr, _) = binder.bind_expr_as(parameter, &Default::default(), ty)?;
            values.push(crate::execution::executor::eval_constant(&expr)?);
        }
        if values.len() != prepared.params.len() {
            return Err(SqlError::new(
                "42601",
                format!("wrong number of parameters for prepared statement \"{name}\""),
            ));
        }
        self.execute_prepared(&prepared, &values)
    }

    fn deallocate(&mut self, name: &str) -> Result<QueryResult> {
        if name == "all" {
            self.prepared.clear();
            return Ok(QueryResult::command("DEALLOCATE ALL"));
        }
        self.prepared.remove(name).ok_or_else(|| {
            SqlError::new(
                "26000",
                format!("prepared statement \"{name}\" does not exist"),
            )
        })?;
        Ok(QueryResult::command("DEALLOCATE"))
    }

    // -----------------------------------------------------------------------------------------
    // VACUUM / ANALYZE
    // -----------------------------------------------------------------------------------------

    /// VACUUM: purges old versions now; FULL also rewrites each table compactly (all tables when
    /// none are named); ANALYZE then gathers statistics.
    fn vacuum(&mut self, full: bool, analyze: bool, tables: &[String]) -> Result<QueryResult> {
        if self.block.is_some() {
            return Err(SqlError::new(
                "25001",
                "VACUUM cannot run inside a transaction block",
            ));
        }
        for table in tables {
            if self.db.engine().table(table).is_none() {
                return Err(SqlError::undefined_table(table));
            }
        }
        self.db.engine().purge()?;
        let vacuumed: Vec<_> = match tables.is_empty() {
            true => self.db.engine().tables(),
            false => tables
                .iter()
                .filter_map(|t| self.db.engine().table(t))
                .collect(),
        };
        if full {
            let engine = Arc::clone(self.db.engine());
            let names: Vec<String> = if tables.is_empty() {
                engine.tables().iter().map(|t| t.name.clone()).collect()
            } else {
                tables.to_vec()
            };
            // One transaction per table, as PostgreSQL's VACUUM; each the statement's, so a
            // cancel or statement_timeout ends the rewrite.
            for name in &names {
                self.in_transaction(|_, txn| {
                    txn.rewrite_table(name)?;
                    Ok(QueryResult::command("VACUUM"))
                })?;
            }
        }
        for table in vacuumed {
            let counters = self.db.table_activity.of(table.id);
            counters.maintained(false, now_micros());
        }
        if analyze {
            self.analyze(tables)?;
        }
        Ok(QueryResult::command("VACUUM"))
    }

    /// `CHECKPOINT`: writes every page changed before now and records the redo point, as
    /// PostgreSQL's does (also inside a transaction block, whose writes are not its concern).
    fn checkpoint(&mut self) -> Result<QueryResult> {
        self.db
            .engine()
            .store()
            .checkpoint()
            .map_err(steady_engine::error::EngineError::from)?;
        Ok(QueryResult::command("CHECKPOINT"))
    }

    fn analyze(&mut self, tables: &[String]) -> Result<QueryResult> {
        let engine = Arc::clone(self.db.engine());
        let targets = if tables.is_empty() {
            engine.tables()
        } else {
            tables
                .iter()
                .map(|t| engine.table(t).ok_or_else(|| SqlError::undefined_table(t)))
                .collect::<Result<Vec<_>>>()?
        };
        for table in targets {
            let (rows, sample) = {
                let mut txn = engine.begin(Isolation::RepeatableRead)?;
                let result = crate::planner::stats::sample_table(&mut txn, &table)?;
                txn.commit()?;
                result
            };
            self.db.stats().set(
                table.id,
                crate::planner::stats::summarize(rows, sample, table.columns.len()),
            );
            let counters = self.db.table_activity.of(table.id);
            counters.maintained(true, now_micros());
        }
        Ok(QueryResult::command("ANALYZE"))
    }

    /// The prepared statements of this session (SQL-level PREPARE), by name.
    pub fn prepared_statements(&self) -> &HashMap<String, Prepared> {
        &self.prepared
    }

    /// Binds a query without running it (for the shell and tests).
    pub fn bind_query(&self, sql: &str) -> Result<BoundQuery> {
        let statements = parse(sql)?;
        let Some(Statement::Sql(statement)) = statements.first() else {
            return Err(SqlError::syntax("not a query"));
        };
        let ast::Statement::Query(query) = statement.as_ref() else {
            return Err(SqlError::syntax("not a query"));
        };
        let mut binder = Binder::new(self.db.engine(), self.db.stats(), Vec::new());
        binder.bind_query(query)
    }
}

/// A `SELECT ... INTO name` query's INTO clause.
fn query_into(query: &ast::Query) -> Option<&ast::SelectInto> {
    match query.body.as_ref() {
        ast::SetExpr::Select(select) => select.into.as_ref(),
        _ => None,
    }
}

fn allowed_when_failed(statement: &Statement) -> bool {
    matches!(
        statement,
        Statement::Sql(s) if matches!(
            s.as_ref(),
            ast::Statement::Rollback { .. } | ast::Statement::Commit { .. }
        )
    )
}

pub fn isolation_name(level: Isolation) -> &'static str {
    match level {
        Isolation::ReadUncommitted => "read uncommitted",
        Isolation::ReadCommitted => "read committed",
        Isolation::RepeatableRead => "repeatable read",
        Isolation::Serializable => "serializable",
    }
}

/// The text of a SET value list (`a, b` for lists; DEFAULT as the empty string).
fn setting_value(values: &[ast::Expr]) -> Result<String> {
    let parts: Vec<String> = values
        .iter()
        .map(|v| match v {
            ast::Expr::Value(v) => crate::planner::bind_expr::literal_text(&v.value),
            ast::Expr::Identifier(ident) => Ok(ident.value.clone()),
            ast::Expr::UnaryOp {
                op: ast::UnaryOperator::Minus,
                expr,
            } => Ok(format!("-{expr}")),
            other => Ok(other.to_string()),
        })
        .collect::<Result<_>>()?;
    Ok(parts.join(", "))
}
