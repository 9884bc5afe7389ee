//! CHECK constraints: `CHECK (expr)` on a column or the table in CREATE TABLE, `ALTER TABLE ADD
//! [CONSTRAINT name] CHECK (expr)` (every existing row is checked first: 23514 if one fails) and
//! `DROP CONSTRAINT`. The expression must be boolean (42804) and hold no subquery (0A000),
//! aggregate or window function; it is stored as text and bound with every write plan
//! (`execution::constraints`). Unnamed constraints get PostgreSQL's names: `<table>_<column>_check`
//! when the expression reads one column, else `<table>_check`, with a number appended while the
//! name is taken.

use std::sync::Arc;

use sqlparser::ast;
use steady_engine::catalog::TableDef;
use steady_types::DataType;

use super::Ddl;
use crate::error::{Result, SqlError};
use crate::execution::constraints::{self, checks, Check, CheckExpr, Constraint};
use crate::execution::executor::ExecCtx;
use crate::planner::bind::Binder;
use crate::planner::bind_write::bind_checks;
use crate::types::normalize_ident;

/// A CHECK constraint as written: its name, if given, and its expression.
pub(super) type WrittenCheck = (Option<String>, ast::Expr);

/// The name and expression of a written CHECK constraint (column option or table constraint).
pub(super) fn written(name: Option<&ast::Ident>, expr: &ast::Expr) -> WrittenCheck {
    (name.map(normalize_ident), expr.clone())
}

impl Ddl<'_> {
    /// Adds `written` CHECK constraints to `table`, after checking every row it holds.
    pub(super) fn add_checks(&self, table: &TableDef, written: &[WrittenCheck]) -> Result<()> {
        if written.is_empty() {
            return Ok(());
        }
        let mut altered = table.clone();
        for (name, expr) in written {
            let columns = self.check_columns(&altered, expr)?;
            let name = match name {
                Some(name) => {
                    if self.constraint_name_taken(&altered, name) {
                        return Err(SqlError::new(
                            "42710",
                            format!(
                                "constraint \"{name}\" for relation \"{}\" already exists",
                                table.name
                            ),
                        ));
                    }
                    name.clone()
                }
                None => self.check_name(&altered, &columns),
            };
            let check = Check {
                name,
                expression: expr.to_string(),
            };
            altered
                .constraints
                .push(constraints::encode(&Constraint::Check(check)));
        }
        self.validate_checks(&altered)?;
        self.txn().alter_table(altered)?;
        Ok(())
    }

    /// Binds `expr` over `table`'s row, checking it may be a CHECK constraint; the columns it
    /// reads.
    fn check_columns(&self, table: &TableDef, expr: &ast::Expr) -> Result<Vec<usize>> {
        let mut binder = Binder::new(self.engine(), self.db.stats(), Vec::new());
        let scope = crate::planner::bind_write::table_scope(table, None);
        let (bound, ty) = binder.bind_expr_with_level(expr, &scope)?;
        if bound.holds_subquery() {
            return Err(SqlError::unsupported("subqueries in CHECK constraints"));
        }
        if !matches!(ty, Some(DataType::Boolean) | None) {
            return Err(SqlError::new(
                "42804",
                format!(
                    "argument of CHECK must be type boolean, not type {}",
                    crate::types::type_name(ty)
                ),
            ));
        }
        let mut columns = Vec::new();
        bound.visit(&mut |e| {
            if let crate::execution::expr::Expr::Column(c) = e {
                if !columns.contains(c) {
                    columns.push(*c);
                }
            }
        });
        Ok(columns)
    }

    /// The CHECK constraints of `table` that read column `position` (dropped with it, as in
    /// PostgreSQL).
    pub(super) fn checks_reading(&self, table: &TableDef, position: usize) -> Result<Vec<String>> {
        let mut reading = Vec::new();
        for check in checks(table) {
            let expr = crate::parser::parse_expr(&check.expression)?;
            if self.check_columns(table, &expr)?.contains(&position) {
                reading.push(check.name);
            }
        }
        Ok(reading)
    }

    /// PostgreSQL's name for an unnamed CHECK reading `columns`.
    fn check_name(&self, table: &TableDef, columns: &[usize]) -> String {
        let base = match columns {
            [column] => format!("{}_{}_check", table.name, table.columns[*column].name),
            _ => format!("{}_check", table.name),
        };
        let mut name = base.clone();
        let mut n = 0;
        while self.constraint_name_taken(table, &name) {
            n += 1;
            name = format!("{base}{n}");
        }
        name
    }

    pub(super) fn constraint_name_taken(&self, table: &TableDef, name: &str) -> bool {
        self.constraint_exists(table, name) || checks(table).iter().any(|c| c.name == name)
    }

    /// Checks every row of `table` against its CHECK constraints (23514 naming the first that
    /// fails).
    fn validate_checks(&self, table: &TableDef) -> Result<()> {
        let mut binder = Binder::new(self.engine(), self.db.stats(), Vec::new());
        let bound: Vec<CheckExpr> = bind_checks(&mut binder, table)?;
        let engine = Arc::clone(self.engine());
        let info = self.session.info().clone();
        let mut ctx = ExecCtx::new(Some(engine), None, &[], &info);
        for row in self.txn().scan_latest_rows(table)? {
            let (_, values) = row?;
            for check in &bound {
                let holds = check.expr.eval(&values, &mut ctx)?;
                if holds == steady_types::Value::Boolean(false) {
                    return Err(SqlError::new(
                        "23514",
                        format!(
                            "check constraint \"{}\" of relation \"{}\" is violated by some row",
                            check.name, table.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}
