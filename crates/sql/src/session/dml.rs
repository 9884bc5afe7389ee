//! Queries and data changes from a session: a SELECT, INSERT, UPDATE or DELETE is bound into a
//! plan (`Binder::bind_statement`) and run by the executor; EXPLAIN goes to [`super::explain`].
//! The command tag comes from the plan's root: `SELECT n`, `INSERT 0 n`, `UPDATE n`, `DELETE n`.

use sqlparser::ast;
use steady_types::DataType;

use crate::error::{Result, SqlError};
use crate::execution::executor::{collect, ExecCtx};
use crate::execution::plan::{Column, Plan};
use crate::planner::bind::{Binder, BoundQuery};
use crate::session::QueryResult;
use crate::types::normalize_ident;

/// Whether a statement changes data or locks rows (refused in READ ONLY transactions).
pub fn writes(statement: &ast::Statement) -> bool {
    match statement {
        ast::Statement::Insert(_) | ast::Statement::Update(_) | ast::Statement::Delete(_) => true,
        ast::Statement::Query(query) => {
            !query.locks.is_empty()
                || is_write(&query.body)
                || query
                    .with
                    .as_ref()
                    .is_some_and(|with| with.cte_tables.iter().any(|c| is_write(&c.query.body)))
        }
        _ => false,
    }
}

/// Whether a query body is an INSERT, UPDATE or DELETE (in a WITH list, or after one).
pub(crate) fn is_write(body: &ast::SetExpr) -> bool {
    matches!(
        body,
        ast::SetExpr::Insert(_) | ast::SetExpr::Update(_) | ast::SetExpr::Delete(_)
    )
}

/// Runs a query or DML statement.
pub fn execute(
    binder: &mut Binder,
    ctx: &mut ExecCtx,
    statement: &ast::Statement,
) -> Result<QueryResult> {
    if let ast::Statement::Explain {
        statement,
        analyze,
        options,
        ..
    } = statement
    {
        return crate::session::explain::explain(
            binder,
            ctx,
            statement,
            *analyze,
            options.as_deref(),
        );
    }
    match binder.bind_statement(statement)? {
        Some(bound) => run_query(&bound, ctx),
        None => Err(SqlError::unsupported(format!(
            "statement {}",
            first_words(statement)
        ))),
    }
}

/// Runs a bound query or write to its result.
pub fn run_query(bound: &BoundQuery, ctx: &mut ExecCtx) -> Result<QueryResult> {
    ctx.check_privileges(&bound.required)?;
    let rows = collect(&bound.plan, ctx)?;
    let tag = command_tag(&bound.plan, rows.len() as u64, ctx.take_changed());
    Ok(QueryResult::rows(tag, bound.columns.clone(), rows))
}

/// The command tag for a plan that returned `rows` rows and wrote `changed`.
pub fn command_tag(plan: &Plan, rows: u64, changed: Option<u64>) -> String {
    let changed = changed.unwrap_or(0);
    match plan {
        Plan::WithWrites { body, .. } => command_tag(body, rows, Some(changed)),
        Plan::Insert(_) => format!("INSERT 0 {changed}"),
        Plan::Update(_) => format!("UPDATE {changed}"),
        Plan::Delete(_) => format!("DELETE {changed}"),
        _ => format!("SELECT {rows}"),
    }
}

fn first_words(statement: &ast::Statement) -> String {
    statement
        .to_string()
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The result columns of a statement, binding it without running it.
pub fn describe(binder: &mut Binder, statement: &ast::Statement) -> Result<Vec<Column>> {
    Ok(match statement {
        ast::Statement::Explain { .. } => vec![Column::new("QUERY PLAN", Some(DataType::Text))],
        ast::Statement::ShowVariable { variable } => {
            let name: Vec<String> = variable.iter().map(normalize_ident).collect();
            vec![Column::new(name.join(" "), Some(DataType::Text))]
        }
        other => binder
            .bind_statement(other)?
            .map(|bound| bound.columns)
            .unwrap_or_default(),
    })
}
