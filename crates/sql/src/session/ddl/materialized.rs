//! Materialized views: a table whose rows are a query's, kept as of its last refresh.
//!
//! `CREATE MATERIALIZED VIEW name [(columns)] AS query [WITH [NO] DATA]` is made as CREATE TABLE
//! AS is ([`super::create_as`]), the table marked with its definition
//! ([`steady_engine::catalog::Materialized`]: the query's text, whether it is populated, what
//! it reads). `REFRESH MATERIALIZED VIEW [CONCURRENTLY] name [WITH [NO] DATA]` deletes its rows
//! and inserts the query's again in the statement's transaction: readers in other sessions keep
//! seeing the old rows until it commits (what PostgreSQL's CONCURRENTLY gives; its plain REFRESH
//! locks readers out instead), and a failed refresh leaves them. CONCURRENTLY keeps PostgreSQL's
//! preconditions (populated, a unique index without WHERE) so that a script written for it
//! behaves alike.
//!
//! Invariants: only REFRESH writes a materialized view's rows (INSERT, UPDATE, DELETE and COPY
//! into it fail with 42809, TRUNCATE and ALTER TABLE too); reading one that is not populated
//! fails with 55000; the relations its query reads cannot be dropped from under it without
//! CASCADE (which drops it too), as for a view.

use std::sync::Arc;

use sqlparser::ast;
use steady_engine::catalog::{Materialized, TableDef};

use super::create_as::CreateAs;
use super::Ddl;
use crate::error::{Result, SqlError};
use crate::execution::executor::{collect, ExecCtx};
use crate::planner::bind::Binder;
use crate::session::{QueryResult, Session};

/// The definition of the materialized view `create` makes, once `binder` has bound its query.
pub(super) fn definition(create: &CreateAs, binder: &mut Binder) -> Result<Materialized> {
    if !binder.params.is_empty() {
        return Err(SqlError::new(
            "42P02",
            "there is no parameter $1 in a materialized view definition",
        ));
    }
    let mut depends_on = std::mem::take(&mut binder.relations_read);
    depends_on.sort();
    depends_on.dedup();
    Ok(Materialized {
        query: create.query.to_string(),
        populated: create.with_data,
        depends_on,
    })
}

/// 42809: a materialized view named where a table was meant, or the other way round.
pub(crate) fn wrong_kind(name: &str, is: &str, hint: &str) -> SqlError {
    SqlError::new("42809", format!("\"{name}\" is not a {is}")).with_hint(hint.to_owned())
}

/// 42809 for TRUNCATE (`hint` None), ALTER TABLE and DROP TABLE of a materialized view.
pub(crate) fn refuse_as_table(table: &TableDef, hint: Option<&str>) -> Result<()> {
    if table.materialized.is_none() {
        return Ok(());
    }
    let error = SqlError::new("42809", format!("\"{}\" is not a table", table.name));
    Err(match hint {
        Some(hint) => error.with_hint(hint.to_owned()),
        None => error,
    })
}

/// What DROP TABLE of a materialized view is told to use.
pub(crate) const DROP_HINT: &str = "Use DROP MATERIALIZED VIEW to remove a materialized view.";

/// What ALTER TABLE of a materialized view is told.
pub(crate) const ALTER_HINT: &str = "This operation is not supported for materialized views.";

impl Ddl<'_> {
    /// Marks `table` a materialized view with `materialized` (or none).
    pub(super) fn set_materialized(
        &self,
        table: &TableDef,
        materialized: Option<Materialized>,
    ) -> Result<Arc<TableDef>> {
        let marked = TableDef {
            materialized,
            ..table.clone()
        };
        Ok(self.txn().alter_table(marked)?)
    }

    /// The materialized view `name`: 42P01 when there is none, 42809 for a table or view.
    fn materialized_view(&self, name: &str) -> Result<Arc<TableDef>> {
        match self.engine().table(name) {
            Some(table) if table.materialized.is_some() => Ok(table),
            Some(_) => Err(wrong_kind(
                name,
                "materialized view",
                "Use DROP TABLE to remove a table.",
            )),
            None if self.engine().view(name)?.is_some() => Err(wrong_kind(
                name,
                "materialized view",
                "Use DROP VIEW to remove a view.",
            )),
            None => Err(SqlError::new(
                "42P01",
                format!("relation \"{name}\" does not exist"),
            )),
        }
    }

    pub(super) fn drop_materialized_views(
        &self,
        names: &[ast::ObjectName],
        if_exists: bool,
        cascade: bool,
    ) -> Result<QueryResult> {
        let (names, mut result) = super::drop_names(
            names,
            if_exists,
            "materialized view",
            QueryResult::command("DROP MATERIALIZED VIEW"),
        )?;
        let mut existing = Vec::new();
        for name in &names {
            match self.materialized_view(name) {
                Ok(_) => existing.push(name.clone()),
                Err(err) if err.code == "42P01" && if_exists => {
                    result = result.with_notice(
                        "NOTICE",
                        "00000",
                        format!("materialized view \"{name}\" does not exist, skipping"),
                    );
                }
                Err(err) => return Err(err),
            }
        }
        result = self.release_dependents(&existing, "materialized view", cascade, result)?;
        for name in &existing {
            self.txn().drop_table(name)?;
        }
        Ok(result)
    }
}

impl Session {
    /// `CREATE MATERIALIZED VIEW`.
    pub(crate) fn create_materialized_view(
        &mut self,
        create: &ast::CreateView,
        with_data: bool,
    ) -> Result<QueryResult> {
        if create.or_replace {
            return Err(SqlError::syntax(
                "syntax error at or near \"MATERIALIZED\" (OR REPLACE is not allowed)",
            ));
        }
        self.create_table_as(CreateAs::from_materialized(create, with_data)?)
    }

    /// `REFRESH MATERIALIZED VIEW`: its rows replaced by the query's in one transaction.
    pub(crate) fn refresh_materialized_view(
        &mut self,
        name: &str,
        concurrently: bool,
        with_data: bool,
    ) -> Result<QueryResult> {
        let db = Arc::clone(&self.db);
        self.in_transaction(|session, txn| {
            let ddl = Ddl::new(&db, session, txn);
            let table = ddl.materialized_view(name).map_err(|err| match err.code {
                "42809" => SqlError::new("0A000", format!("\"{name}\" is not a materialized view")),
                _ => err,
            })?;
            let definition = table.materialized.clone().expect("a materialized view");
            if concurrently {
                check_concurrently(&table, &definition, with_data)?;
            }
            // Its rows go as a DELETE's do: in key order, each leaf visited once per batch.
            let delete = delete_all(&table.name)?;
            let mut binder = Binder::new(db.engine(), db.stats(), Vec::new());
            binder.refreshing = true;
            {
                let mut txn = ddl.txn();
                let engine = Arc::clone(db.engine());
                let mut ctx = ExecCtx::new(Some(engine), Some(&mut *txn), &[], &session.info);
                crate::session::dml::execute(&mut binder, &mut ctx, &delete)?;
            }
            let table = match definition.populated == with_data {
                true => table,
                false => {
                    let marked = Materialized {
                        populated: with_data,
                        ..definition.clone()
                    };
                    ddl.set_materialized(&table, Some(marked))?
                }
            };
            if with_data {
                let query = crate::planner::bind::view::view_query(&definition.query)?;
                let mut binder = Binder::new(db.engine(), db.stats(), Vec::new());
                let bound = binder.bind_query(&query)?;
                let insert = binder.bind_insert_rows(table, bound.plan)?;
                let mut txn = ddl.txn();
                let engine = Arc::clone(db.engine());
                let mut ctx = ExecCtx::new(Some(engine), Some(&mut *txn), &[], &session.info);
                collect(&insert.plan, &mut ctx)?;
            }
            Ok(QueryResult::command("REFRESH MATERIALIZED VIEW"))
        })
    }
}

/// `DELETE FROM name`, parsed.
fn delete_all(name: &str) -> Result<ast::Statement> {
    let sql = format!("DELETE FROM {}", crate::types::quote_ident(name));
    match crate::parser::parse(&sql)?.pop() {
        Some(crate::parser::Statement::Sql(statement)) => Ok(*statement),
        _ => Err(SqlError::new("XX000", "a DELETE that does not parse")),
    }
}

/// PostgreSQL's conditions for REFRESH ... CONCURRENTLY: not WITH NO DATA (42601), a populated
/// view (0A000), and a unique index without WHERE on it (55000).
fn check_concurrently(table: &TableDef, definition: &Materialized, with_data: bool) -> Result<()> {
    if !with_data {
        return Err(SqlError::new(
            "42601",
            "CONCURRENTLY and WITH NO DATA options cannot be used together",
        ));
    }
    if !definition.populated {
        return Err(SqlError::new(
            "0A000",
            "CONCURRENTLY cannot be used when the materialized view is not populated",
        ));
    }
    let unique = table.indexes.iter().any(|index| {
        index.unique
            && index.columns.iter().all(|&c| {
                crate::execution::constraints::column_partial(&table.columns[c].name).is_none()
            })
    });
    if !unique {
        return Err(SqlError::new(
            "55000",
            format!(
                "cannot refresh materialized view \"public.{}\" concurrently",
                table.name
            ),
        )
        .with_hint(
            "Create a unique index with no WHERE clause on one or more columns of the materialized view.",
        ));
    }
    Ok(())
}
