//! Query plans: the tree of operators the binder builds and the executor runs.
//!
//! Every plan node produces rows of a fixed width; [`Expr::Column`] indexes refer to the row of the
//! node's input (for a join, the left row followed by the right row). A [`Plan::Scan`] reads one
//! table through an [`Access`] path and always re-checks its whole filter, so an access path only
//! narrows which rows are read: it never decides alone which rows qualify.

use std::sync::Arc;

use steady_engine::catalog::{IndexDef, TableDef};
use steady_engine::engine::row_lock::{RowLockMode, RowLockWait};
use steady_types::DataType;

use crate::error::Result;
use crate::execution::aggregate::AggCall;
use crate::execution::executor::{ExecCtx, Row};
use crate::execution::expr::Expr;
use crate::execution::set_functions::SetCall;
use crate::execution::write::{DeletePlan, InsertPlan, InsertSource, UpdatePlan};

/// A column of a plan's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    /// `None` for an untyped NULL or string literal (reported as text).
    pub ty: Option<DataType>,
}

impl Column {
    pub fn new(name: impl Into<String>, ty: Option<DataType>) -> Self {
        Column {
            name: name.into(),
            ty,
        }
    }
}

/// How a scan reaches a table's rows.
#[derive(Debug, Clone)]
pub enum Access {
    /// Every row, in primary-key order.
    Full,
    /// A range of the clustered index.
    Primary(KeyRange),
    /// A range of a secondary index, then each row from the clustered index.
    Index(IndexDef, KeyRange),
}

/// A range over the leading columns of a key: equalities on the first columns, then optional bounds
/// on the next one. Values are expressions (literals or parameters) evaluated when the scan opens.
#[derive(Debug, Clone, Default)]
pub struct KeyRange {
    pub equal: Vec<Expr>,
    pub lower: Option<Expr>,
    pub upper: Option<Expr>,
    /// The types of the key's columns, for encoding the values.
    pub types: Vec<DataType>,
}

impl KeyRange {
    pub fn is_empty_range(&self) -> bool {
        self.equal.is_empty() && self.lower.is_none() && self.upper.is_none()
    }
}

/// A sort key: an expression over the input row and its direction.
#[derive(Debug, Clone)]
pub struct SortKey {
    pub expr: Expr,
    pub descending: bool,
    pub nulls_first: bool,
}

/// One equality of a hash join's condition: `left` reads the left row, `right` the right row
/// (its own columns, numbered from 0).
#[derive(Debug, Clone)]
pub struct JoinKey {
    pub left: Expr,
    pub right: Expr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
    /// The left rows no right row matches, NULL-extended (`LEFT JOIN ... WHERE r.c IS NULL`
    /// with `r.c` never NULL in a match).
    Anti,
    /// The right rows no left row matches, NULL-extended on the left (an anti join turned
    /// around to hash its smaller side).
    RightAnti,
}

/// A plan node.
#[derive(Debug, Clone)]
pub enum Plan {
    /// The rows of a table that pass `filter`; the output is the table's columns. `columns`, when
    /// set, marks the columns anything reads ([`prune_scan_columns`]): the others are not decoded
    /// and read as NULL.
    Scan {
        table: Arc<TableDef>,
        access: Access,
        filter: Option<Expr>,
        columns: Option<Vec<bool>>,
    },
    /// Literal rows (`VALUES`, or a single empty row for `SELECT` without `FROM`).
    Values {
        rows: Vec<Vec<Expr>>,
        width: usize,
    },
    /// A system view, computed when the scan opens, and its oid: each row ends with it, the
    /// view's system column [`TABLEOID`].
    System(&'static SystemTable, i64),
    /// `generate_series(start, stop [, step])`.
    Series {
        start: Expr,
        stop: Expr,
        step: Option<Expr>,
    },
    Filter {
        input: Box<Plan>,
        predicate: Expr,
    },
    Project {
        input: Box<Plan>,
        exprs: Vec<Expr>,
    },
    /// Set-returning functions of a select list: the input's columns, then one per call (see
    /// [`crate::execution::set_functions`]).
    ProjectSet {
        input: Box<Plan>,
        calls: Vec<SetCall>,
    },
    /// Output: the group values, then the aggregate values.
    Aggregate {
        input: Box<Plan>,
        groups: Vec<Expr>,
        aggregates: Vec<AggCall>,
        /// Grouping sets (ROLLUP, CUBE, GROUPING SETS): per set, which of `groups` it groups
        /// by; the others read NULL in its rows. Empty: one set of all `groups`.
        sets: Vec<Vec<bool>>,
    },
    Sort {
        input: Box<Plan>,
        keys: Vec<SortKey>,
    },
    /// Window functions: each input row followed by one value per call (see
    /// [`crate::execution::window`]).
    Window {
        input: Box<Plan>,
        calls: Vec<crate::execution::window::WindowCall>,
    },
    Limit {
        input: Box<Plan>,
        limit: Option<Expr>,
        offset: Option<Expr>,
        /// `FETCH FIRST n ROWS WITH TIES`: the sort keys (over the input, a Sort) by which the
        /// rows after the n-th that equal it come too; empty for a plain limit.
        ties: Vec<SortKey>,
    },
    /// `SELECT ... FOR UPDATE / FOR SHARE` over one table (see
    /// [`crate::execution::executor::lock_rows`]): each row of the input (the table's columns)
    /// is locked as it is pulled and replaced by the row's newest version, which must still pass
    /// `recheck`, the WHERE clause. Placed above the sort and below LIMIT, so that only the rows
    /// returned (and those OFFSET skips) are locked, as PostgreSQL's LockRows.
    LockRows {
        input: Box<Plan>,
        table: Arc<TableDef>,
        mode: RowLockMode,
        wait: RowLockWait,
        recheck: Option<Expr>,
    },
    /// Removes duplicate rows (keeping the first of each).
    Distinct {
        input: Box<Plan>,
    },
    /// Join over the materialised right side: a hash join on `keys` when there are any (a pair
    /// matches when every key's two values are equal, as `=` says), otherwise a nested loop;
    /// `on`, the rest of the condition, sees the left row followed by the right row. Right and
    /// full joins also emit the right rows no left row matched. Built by
    /// [`crate::planner::join::join`], which pushes what it can of the condition below it.
    Join {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        keys: Vec<JoinKey>,
        on: Option<Expr>,
        left_width: usize,
        right_width: usize,
    },
    /// `left [LEFT] JOIN LATERAL (subquery)`: the subquery runs once per left row, which it sees
    /// as its enclosing row; `on` sees the left row followed by the subquery's row.
    Lateral {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        on: Option<Expr>,
        right_width: usize,
    },
    /// A WITH query computed once per statement (its rows kept under `id`, shared by every
    /// reference): one that is MATERIALIZED, calls a volatile function, or is recursive.
    Materialized {
        id: usize,
        input: Box<Plan>,
    },
    /// A statement whose WITH list holds INSERT, UPDATE or DELETE: each write runs once, in
    /// order, before `body` is opened, its RETURNING rows kept under its id (read by the body's
    /// [`Plan::Materialized`] references to it), whether or not the body reads them.
    WithWrites {
        writes: Vec<(usize, Plan)>,
        body: Box<Plan>,
    },
    /// `WITH RECURSIVE`'s `anchor UNION [ALL] recursive`: the anchor's rows, then the recursive
    /// term run again and again over the rows the previous round added (its [`Plan::WorkTable`]
    /// `id`) until a round adds none; without ALL, rows already produced are not added again.
    RecursiveUnion {
        id: usize,
        anchor: Box<Plan>,
        recursive: Box<Plan>,
        all: bool,
    },
    /// The rows the previous round of the recursive union `id` added.
    WorkTable {
        id: usize,
    },
    /// `UNION [ALL]`, `INTERSECT`, `EXCEPT` of inputs of one width.
    SetOp {
        left: Box<Plan>,
        right: Box<Plan>,
        op: SetOpKind,
        all: bool,
    },
    /// INSERT: its rows are the RETURNING rows (see [`crate::execution::write`]).
    Insert(Box<InsertPlan>),
    /// UPDATE of the rows its target visits.
    Update(Box<UpdatePlan>),
    /// DELETE of the rows its target visits.
    Delete(Box<DeletePlan>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOpKind {
    Union,
    Intersect,
    Except,
}

impl Plan {
    /// A plan giving one empty row: the input of `SELECT` without `FROM`.
    pub fn single_row() -> Plan {
        Plan::Values {
            rows: vec![vec![]],
            width: 0,
        }
    }

    /// The node's name in EXPLAIN.
    pub fn label(&self) -> String {
        match self {
            Plan::Scan { table, access, .. } => match access {
                Access::Full => format!("Seq Scan on {}", table.name),
                Access::Primary(_) => {
                    format!("Index Scan using {}_pkey on {}", table.name, table.name)
                }
                Access::Index(index, _) => {
                    format!("Index Scan using {} on {}", index.name, table.name)
                }
            },
            Plan::Values { .. } => "Values Scan".into(),
            Plan::System(table, _) => format!("System Scan on {}", table.name),
            Plan::Series { .. } => "Function Scan on generate_series".into(),
            Plan::Filter { .. } => "Filter".into(),
            Plan::Project { .. } => "Project".into(),
            Plan::ProjectSet { .. } => "ProjectSet".into(),
            Plan::Aggregate { groups, .. } if groups.is_empty() => "Aggregate".into(),
            Plan::Aggregate { .. } => "HashAggregate".into(),
            Plan::Sort { .. } => "Sort".into(),
            Plan::Window { .. } => "WindowAgg".into(),
            Plan::Limit { .. } => "Limit".into(),
            Plan::Distinct { .. } => "Unique".into(),
            Plan::LockRows { .. } => "LockRows".into(),
            Plan::Join { kind, keys, .. } => {
                let method = if keys.is_empty() {
                    "Nested Loop"
                } else {
                    "Hash"
                };
                match (kind, keys.is_empty()) {
                    (JoinKind::Inner, true) => method.into(),
                    (JoinKind::Inner, false) => "Hash Join".into(),
                    (JoinKind::Left, _) => format!("{method} Left Join"),
                    (JoinKind::Right, _) => format!("{method} Right Join"),
                    (JoinKind::Full, _) => format!("{method} Full Join"),
                    (JoinKind::Anti, _) => format!("{method} Anti Join"),
                    (JoinKind::RightAnti, _) => format!("{method} Right Anti Join"),
                }
            }
            Plan::Lateral { .. } => "Nested Loop (lateral)".into(),
            Plan::Materialized { id, .. } => format!("CTE Scan (computed once, #{id})"),
            Plan::WithWrites { .. } => "WITH writes (each run once, first)".into(),
            Plan::RecursiveUnion { .. } => "Recursive Union".into(),
            Plan::WorkTable { .. } => "WorkTable Scan".into(),
            Plan::SetOp { op, all, .. } => {
                let name = match op {
                    SetOpKind::Union => "Append",
                    SetOpKind::Intersect => "SetOp Intersect",
                    SetOpKind::Except => "SetOp Except",
                };
                format!("{name}{}", if *all { " All" } else { "" })
            }
            Plan::Insert(insert) => format!("Insert on {}", insert.table.name),
            Plan::Update(update) => format!("Update on {}", update.target.table.name),
            Plan::Delete(delete) => format!("Delete on {}", delete.target.table.name),
        }
    }

    /// The node's detail lines in EXPLAIN (conditions, keys), columns named as
    /// [`Plan::output_names`] names its input's.
    pub fn details(&self) -> Vec<String> {
        let input_names = || match self.children().first() {
            Some(input) => input.output_names(),
            None => Vec::new(),
        };
        match self {
            Plan::Scan {
                table,
                access,
                filter,
                ..
            } => {
                let names: Vec<String> = table.columns.iter().map(|c| c.name.clone()).collect();
                let mut lines = Vec::new();
                let range = match access {
                    Access::Full => None,
                    Access::Primary(range) => Some((range, &table.primary_key)),
                    Access::Index(index, range) => Some((range, &index.columns)),
                };
                if let Some((range, key)) = range {
                    let key_names: Vec<&str> = key
                        .iter()
                        .map(|&c| crate::execution::constraints::shown_column(&names[c]))
                        .collect();
                    lines.push(format!("Index Cond: {}", describe_range(range, &key_names)));
                }
                if let Access::Index(..) = access {
                    // Transaction::index_rows: a multi-range read.
                    lines.push("Row Fetch: in primary-key order, leaves read ahead".into());
                }
                if let Some(filter) = filter {
                    lines.push(format!("Filter: {}", filter.named(&names)));
                }
                lines
            }
            Plan::Filter { predicate, .. } => {
                vec![format!("Filter: {}", predicate.named(&input_names()))]
            }
            Plan::Join {
                left,
                right,
                keys,
                on,
                ..
            } => {
                let (left, right) = (left.output_names(), right.output_names());
                let mut lines = Vec::new();
                if !keys.is_empty() {
                    let parts: Vec<String> = keys
                        .iter()
                        .map(|k| format!("{} = {}", k.left.named(&left), k.right.named(&right)))
                        .collect();
                    lines.push(format!("Hash Cond: ({})", parts.join(" AND ")));
                }
                let both: Vec<String> = left.into_iter().chain(right).collect();
                lines.extend(
                    on.iter()
                        .map(|on| format!("Join Filter: {}", on.named(&both))),
                );
                lines
            }
            Plan::Lateral {
                left,
                right,
                on: Some(on),
                ..
            } => {
                let both: Vec<String> = left
                    .output_names()
                    .into_iter()
                    .chain(right.output_names())
                    .collect();
                vec![format!("Join Filter: {}", on.named(&both))]
            }
            Plan::Sort { keys, .. } => {
                let names = input_names();
                let keys: Vec<String> = keys
                    .iter()
                    .map(|k| {
                        let desc = if k.descending { " DESC" } else { "" };
                        format!("{}{desc}", k.expr.named(&names))
                    })
                    .collect();
                vec![format!("Sort Key: {}", keys.join(", "))]
            }
            Plan::Aggregate { groups, sets, .. } if !groups.is_empty() => {
                let names = input_names();
                let keys: Vec<String> =
                    groups.iter().map(|g| g.named(&names).to_string()).collect();
                if sets.is_empty() {
                    return vec![format!("Group Key: {}", keys.join(", "))];
                }
                sets.iter()
                    .map(|active| {
                        let set: Vec<&str> = keys
                            .iter()
                            .zip(active)
                            .filter(|(_, on)| **on)
                            .map(|(key, _)| key.as_str())
                            .collect();
                        match set.as_slice() {
                            [] => "Group Key: ()".to_owned(),
                            set => format!("Group Key: {}", set.join(", ")),
                        }
                    })
                    .collect()
            }
            Plan::Update(update) => {
                write_limit_details(&update.target, update.limit.as_ref(), false)
            }
            Plan::Delete(delete) => {
                write_limit_details(&delete.target, delete.limit.as_ref(), delete.in_key_order)
            }
            _ => Vec::new(),
        }
    }

    /// Names for the columns of the node's output, for EXPLAIN: `table.column` from scans, the
    /// expressions a projection or aggregation computes, `#i` where nothing better is known.
    pub fn output_names(&self) -> Vec<String> {
        match self {
            Plan::Scan { table, .. } => table
                .columns
                .iter()
                .map(|c| format!("{}.{}", table.name, c.name))
                .collect(),
            Plan::System(table, _) => table
                .columns
                .iter()
                .map(|(name, _)| *name)
                .chain([TABLEOID])
                .map(|name| format!("{}.{name}", table.name))
                .collect(),
            Plan::Series { .. } => vec!["generate_series".into()],
            Plan::Values { width, .. } => (1..=*width).map(|i| format!("column{i}")).collect(),
            Plan::Filter { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Distinct { input }
            | Plan::LockRows { input, .. }
            | Plan::Materialized { input, .. } => input.output_names(),
            Plan::WithWrites { body, .. } => body.output_names(),
            Plan::SetOp { left: input, .. } | Plan::RecursiveUnion { anchor: input, .. } => {
                input.output_names()
            }
            Plan::Project { input, exprs } => {
                let names = input.output_names();
                exprs.iter().map(|e| e.named(&names).to_string()).collect()
            }
            Plan::Aggregate {
                input,
                groups,
                aggregates,
                ..
            } => {
                let names = input.output_names();
                let groups = groups.iter().map(|g| g.named(&names).to_string());
                groups
                    .chain((0..aggregates.len()).map(|i| format!("agg{i}")))
                    .collect()
            }
            Plan::Window { input, calls } => input
                .output_names()
                .into_iter()
                .chain((0..calls.len()).map(|i| format!("window{i}")))
                .collect(),
            Plan::ProjectSet { input, calls } => input
                .output_names()
                .into_iter()
                .chain((0..calls.len()).map(|i| format!("set{i}")))
                .collect(),
            Plan::Join { left, right, .. } | Plan::Lateral { left, right, .. } => left
                .output_names()
                .into_iter()
                .chain(right.output_names())
                .collect(),
            Plan::WorkTable { .. } | Plan::Insert(_) | Plan::Update(_) | Plan::Delete(_) => {
                Vec::new()
            }
        }
    }

    /// The node's inputs.
    pub fn children(&self) -> Vec<&Plan> {
        match self {
            Plan::Scan { .. }
            | Plan::Values { .. }
            | Plan::System(..)
            | Plan::Series { .. }
            | Plan::WorkTable { .. } => vec![],
            Plan::Materialized { input, .. } => vec![input],
            Plan::WithWrites { writes, body } => writes
                .iter()
                .map(|(_, write)| write)
                .chain([body.as_ref()])
                .collect(),
            Plan::RecursiveUnion {
                anchor, recursive, ..
            } => vec![anchor, recursive],
            Plan::Filter { input, .. }
            | Plan::Project { input, .. }
            | Plan::Aggregate { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Window { input, .. }
            | Plan::ProjectSet { input, .. }
            | Plan::Limit { input, .. }
            | Plan::LockRows { input, .. }
            | Plan::Distinct { input } => vec![input],
            Plan::Join { left, right, .. }
            | Plan::Lateral { left, right, .. }
            | Plan::SetOp { left, right, .. } => vec![left, right],
            Plan::Insert(insert) => match &insert.source {
                InsertSource::Query(plan) => vec![plan],
                InsertSource::Values(_) => vec![],
            },
            Plan::Update(update) => vec![&update.target.shown],
            Plan::Delete(delete) => vec![&delete.target.shown],
        }
    }
}

/// `(a = 1 AND b >= 2 AND b <= 5)` for a range over the key columns `key`.
fn describe_range(range: &KeyRange, key: &[&str]) -> String {
    let column = |i: usize| key.get(i).copied().unwrap_or("?");
    let mut parts: Vec<String> = range
        .equal
        .iter()
        .enumerate()
        .map(|(i, e)| format!("{} = {e}", column(i)))
        .collect();
    let next = column(range.equal.len());
    if let Some(lower) = &range.lower {
        parts.push(format!("{next} >= {lower}"));
    }
    if let Some(upper) = &range.upper {
        parts.push(format!("{next} <= {upper}"));
    }
    format!("({})", parts.join(" AND "))
}

/// Marks on each table scan the columns the plan above it reads, so that the scan decodes only
/// those (`Plan::Scan::columns`). `needed` is what the parent reads of this node's output (None:
/// all of it). Only chains of single-input nodes over a scan are pruned; under a join, a set
/// operation, `DISTINCT`, or any expression holding a subquery (which may read the row through an
/// outer reference), every column stays.
pub fn prune_scan_columns(plan: &mut Plan, needed: Option<Vec<bool>>) {
    match plan {
        Plan::Scan {
            table,
            filter,
            columns,
            ..
        } => {
            let width = table.columns.len();
            *columns = needed.and_then(|mut needed| {
                needed.resize(width, false);
                let known = mark_columns(&mut needed, filter.iter());
                (known && !needed.iter().all(|&read| read)).then_some(needed)
            });
        }
        Plan::Filter { input, predicate } => {
            let needed = needed.and_then(|mut n| mark_columns(&mut n, [&*predicate]).then_some(n));
            prune_scan_columns(input, needed);
        }
        Plan::Sort { input, keys } => {
            let needed = needed
                .and_then(|mut n| mark_columns(&mut n, keys.iter().map(|k| &k.expr)).then_some(n));
            prune_scan_columns(input, needed);
        }
        Plan::Limit { input, .. } => prune_scan_columns(input, needed),
        Plan::Project { input, exprs } => {
            let mut read = Vec::new();
            let needed = mark_columns(&mut read, exprs.iter()).then_some(read);
            prune_scan_columns(input, needed);
        }
        Plan::Aggregate {
            input,
            groups,
            aggregates,
            ..
        } => {
            let mut read = Vec::new();
            let exprs = groups.iter().chain(aggregates.iter().flat_map(|a| {
                a.args
                    .iter()
                    .chain(a.filter.iter())
                    .chain(a.order_by.iter().map(|k| &k.expr))
            }));
            let needed = mark_columns(&mut read, exprs).then_some(read);
            prune_scan_columns(input, needed);
        }
        Plan::Window { input, .. }
        | Plan::ProjectSet { input, .. }
        | Plan::Distinct { input }
        | Plan::LockRows { input, .. }
        | Plan::Materialized { input, .. } => prune_scan_columns(input, None),
        Plan::WithWrites { writes, body } => {
            writes
                .iter_mut()
                .for_each(|(_, write)| prune_scan_columns(write, None));
            prune_scan_columns(body, needed);
        }
        Plan::RecursiveUnion {
            anchor, recursive, ..
        } => {
            prune_scan_columns(anchor, None);
            prune_scan_columns(recursive, None);
        }
        Plan::Join { left, right, .. }
        | Plan::Lateral { left, right, .. }
        | Plan::SetOp { left, right, .. } => {
            prune_scan_columns(left, None);
            prune_scan_columns(right, None);
        }
        Plan::Values { .. }
        | Plan::System(..)
        | Plan::Series { .. }
        | Plan::WorkTable { .. }
        | Plan::Insert(_)
        | Plan::Update(_)
        | Plan::Delete(_) => {}
    }
}

/// Marks in `read` the input columns `exprs` read; false if one of them holds a subquery (what
/// it reads is not known here).
pub(crate) fn mark_columns<'e>(
    read: &mut Vec<bool>,
    exprs: impl IntoIterator<Item = &'e Expr>,
) -> bool {
    let mut known = true;
    for expr in exprs {
        expr.visit(&mut |e| match e {
            Expr::Column(i) => {
                if read.len() <= *i {
                    read.resize(i + 1, false);
                }
                read[*i] = true;
            }
            Expr::Subquery(_) => known = false,
            _ => {}
        });
    }
    known
}

/// A read-only view computed from the engine.
/// The system column every system view has besides its own: the view's oid, as the `tableoid`
/// of PostgreSQL's catalogs is their `pg_class` oid (clients such as pg_dump key the objects they
/// read by it and by `pg_depend.classid`). Not part of `*`.
pub const TABLEOID: &str = "tableoid";

pub struct SystemTable {
    pub schema: &'static str,
    pub name: &'static str,
    pub columns: &'static [(&'static str, DataType)],
    pub rows: fn(&mut ExecCtx) -> Result<Vec<Row>>,
}

impl std::fmt::Debug for SystemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.schema, self.name)
    }
}

/// The EXPLAIN lines of an UPDATE's or DELETE's `[ORDER BY <primary key>] LIMIT n`.
fn write_limit_details(
    target: &crate::execution::write::Target,
    limit: Option<&Expr>,
    in_key_order: bool,
) -> Vec<String> {
    let table = &target.table;
    let mut lines = Vec::new();
    if in_key_order {
        let key: Vec<&str> = table
            .primary_key
            .iter()
            .map(|&p| table.columns[p].name.as_str())
            .collect();
        lines.push(format!("Order: primary key ({})", key.join(", ")));
    }
    match limit {
        Some(Expr::Cast(count, _)) if matches!(**count, Expr::Literal(_)) => {
            lines.push(format!("Limit: {count}"));
        }
        Some(limit) => lines.push(format!("Limit: {limit}")),
        None => {}
    }
    lines
}
