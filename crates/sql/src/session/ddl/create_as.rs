//! `CREATE TABLE name [(columns)] AS query [WITH [NO] DATA]` and `SELECT ... INTO name FROM ...`:
//! the query is bound first (so a bad query creates nothing), the table is created with the
//! query's column names (or those listed) and types (text where the query's is unknown, as
//! PostgreSQL's), then the query's rows are inserted, in the same transaction as the creation. The
//! command tag is `SELECT n`.
//!
//! `CREATE MATERIALIZED VIEW` is made the same way, the table then marked as one
//! ([`steady_engine::catalog::Materialized`]: the query's text, whether it holds its rows, what
//! it reads); see [`super::materialized`].
//!
//! Refused: `CREATE TEMPORARY TABLE` (SteadyDB has no session-private tables yet; making it a
//! permanent one would silently change what was asked).

use steady_engine::catalog::ColumnDef;

use super::Ddl;
use crate::error::{Result, SqlError};
use crate::execution::executor::{collect, ExecCtx};
use crate::planner::bind::{Binder, BoundQuery};
use crate::session::{QueryResult, Session};
use crate::system::public_object_name;
use crate::types::normalize_ident;
use sqlparser::ast;
use std::sync::Arc;

/// What to create, whichever syntax asked for it.
pub struct CreateAs<'a> {
    pub name: String,
    pub column_names: Vec<String>,
    pub query: &'a ast::Query,
    pub if_not_exists: bool,
    pub with_data: bool,
    /// A materialized view, not a table.
    pub materialized: bool,
}

impl<'a> CreateAs<'a> {
    /// `CREATE TABLE ... AS`.
    pub fn from_create(create: &'a ast::CreateTable, query: &'a ast::Query) -> Result<Self> {
        refuse_temporary(create.temporary)?;
        Ok(CreateAs {
            name: public_object_name(&create.name)?,
            column_names: create
                .columns
                .iter()
                .map(|c| normalize_ident(&c.name))
                .collect(),
            query,
            if_not_exists: create.if_not_exists,
            with_data: create.with_data.as_ref().is_none_or(|w| w.data),
            materialized: false,
        })
    }

    /// `SELECT ... INTO name ...`: `query` is the statement with its INTO clause removed.
    pub fn from_select_into(into: &ast::SelectInto, query: &'a ast::Query) -> Result<Self> {
        refuse_temporary(into.temporary)?;
        let name = match into.targets.as_slice() {
            [ast::Expr::Identifier(name)] => normalize_ident(name),
            [ast::Expr::CompoundIdentifier(parts)] if !parts.is_empty() => {
                normalize_ident(&parts[parts.len() - 1])
            }
            _ => return Err(SqlError::syntax("SELECT ... INTO takes one table name")),
        };
        Ok(CreateAs {
            name,
            column_names: Vec::new(),
            query,
            if_not_exists: false,
            with_data: true,
            materialized: false,
        })
    }

    /// `CREATE MATERIALIZED VIEW name [(columns)] AS query [WITH [NO] DATA]`.
    pub fn from_materialized(create: &'a ast::CreateView, with_data: bool) -> Result<Self> {
        refuse_temporary(create.temporary)?;
        Ok(CreateAs {
            name: public_object_name(&create.name)?,
            column_names: create
                .columns
                .iter()
                .map(|c| normalize_ident(&c.name))
                .collect(),
            query: &create.query,
            if_not_exists: create.if_not_exists,
            with_data,
            materialized: true,
        })
    }
}

pub(super) fn refuse_temporary(temporary: bool) -> Result<()> {
    if temporary {
        return Err(SqlError::unsupported("temporary tables"));
    }
    Ok(())
}

impl Session {
    /// Creates the table and fills it with the query's rows, in one transaction (the block's, or
    /// one of its own): a failed insert leaves no table behind.
    pub(crate) fn create_table_as(&mut self, create: CreateAs) -> Result<QueryResult> {
        let db = Arc::clone(&self.db);
        self.in_transaction(|session, txn| {
            let ddl = Ddl::new(&db, session, txn);
            let tag = match create.materialized {
                true => "CREATE MATERIALIZED VIEW",
                false => "CREATE TABLE AS",
            };
            if let Some(skipped) = ddl.existing_relation(&create.name, create.if_not_exists, tag)? {
                return Ok(skipped);
            }
            let mut binder = Binder::new(db.engine(), db.stats(), Vec::new());
            let bound = binder.bind_query(create.query)?;
            let columns = table_columns(&create.column_names, &bound)?;
            let mut table = ddl.txn().create_table(&create.name, columns, Vec::new())?;
            if create.materialized {
                let materialized = super::materialized::definition(&create, &mut binder)?;
                table = ddl.set_materialized(&table, Some(materialized))?;
            }
            if !create.with_data {
                return Ok(QueryResult::command(tag));
            }
            let insert = binder.bind_insert_rows(table, bound.plan)?;
            let mut txn = ddl.txn();
            let mut ctx = ExecCtx::new(
                Some(Arc::clone(db.engine())),
                Some(&mut *txn),
                &[],
                &session.info,
            );
            collect(&insert.plan, &mut ctx)?;
            Ok(QueryResult::command(format!(
                "SELECT {}",
                ctx.take_changed().unwrap_or(0)
            )))
        })
    }
}

/// The new table's columns: the listed names first, then the query's; each of the query's types.
fn table_columns(listed: &[String], bound: &BoundQuery) -> Result<Vec<ColumnDef>> {
    let named = super::named_columns(
        listed,
        &bound.columns,
        "too many column names were specified",
    )?;
    Ok(named
        .into_iter()
        .map(|(name, data_type)| ColumnDef::plain(name, data_type))
        .collect())
}
