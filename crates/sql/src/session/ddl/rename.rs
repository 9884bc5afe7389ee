//! `ALTER TABLE t RENAME TO u` and `ALTER TABLE t RENAME [COLUMN] a TO b`: catalog-only changes,
//! undone with their transaction like any DDL.
//!
//! * A table's new name is followed by the foreign keys that reference it (theirs name it).
//! * A column's new name is followed by every expression of its table that reads it — defaults,
//!   generation expressions, CHECK constraints, and the hidden columns of expression and partial
//!   indexes (renamed after their new expression text, so the binder still finds them) —
//!   rewritten identifier by identifier on the parsed expression, as PostgreSQL's stored
//!   expressions follow a rename.
//! * A view is kept as its SQL text, which would still name the old table or column, so a rename
//!   of a table a view reads is refused (0A000) rather than leaving the view broken; PostgreSQL
//!   follows it there too.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr as AstExpr, Ident, VisitMut, VisitorMut};

use super::*;
use crate::execution::constraints::{column_expression, column_partial, Check};

impl Ddl<'_> {
    pub(super) fn rename_table(&self, table: &TableDef, new: &str) -> Result<()> {
        if self.relation_exists(new)? || self.engine().view(new)?.is_some() {
            return Err(SqlError::new(
                "42P07",
                format!("relation \"{new}\" already exists"),
            ));
        }
        self.refuse_rename_under_a_view(&table.name)?;
        for (child, fk) in referencing(self.engine(), &table.name) {
            if child.id == table.id {
                continue;
            }
            let renamed = rename_foreign_key_parent(&child, &fk.name, new);
            self.txn().alter_table(renamed)?;
        }
        let current = self
            .engine()
            .table(&table.name)
            .ok_or_else(|| SqlError::undefined_table(&table.name))?;
        let own_keys: Vec<String> = foreign_keys(&current)
            .into_iter()
            .filter(|fk| fk.table == table.name)
            .map(|fk| fk.name)
            .collect();
        let mut renamed = (*current).clone();
        for name in own_keys {
            renamed = rename_foreign_key_parent(&renamed, &name, new);
        }
        renamed.name = new.to_string();
        self.txn().alter_table(renamed)?;
        Ok(())
    }

    pub(super) fn rename_column(&self, table: &TableDef, old: &str, new: &str) -> Result<()> {
        let position = table
            .column(old)
            .filter(|_| !is_hidden(old))
            .ok_or_else(|| SqlError::undefined_column(old))?;
        if table.column(new).is_some() {
            return Err(SqlError::new(
                "42701",
                format!(
                    "column \"{new}\" of relation \"{}\" already exists",
                    table.name
                ),
            ));
        }
        self.refuse_rename_under_a_view(&table.name)?;
        let mut renamed = table.clone();
        renamed.columns[position].name = new.to_string();
        for column in &mut renamed.columns {
            column.default = column
                .default
                .as_deref()
                .map(|text| renamed_in(text, old, new))
                .transpose()?;
            column.generated = column
                .generated
                .as_deref()
                .map(|text| renamed_in(text, old, new))
                .transpose()?;
            column.name = renamed_index_column(&column.name, old, new)?;
        }
        renamed.constraints = renamed
            .constraints
            .iter()
            .map(|text| match serde_json::from_str(text) {
                Ok(Constraint::Check(check)) => {
                    Ok(constraints::encode(&Constraint::Check(Check {
                        expression: renamed_in(&check.expression, old, new)?,
                        ..check
                    })))
                }
                _ => Ok(text.clone()),
            })
            .collect::<Result<_>>()?;
        self.txn().alter_table(renamed)?;
        Ok(())
    }

    /// 0A000 if a view reads `table` (its text would still name the old name).
    fn refuse_rename_under_a_view(&self, table: &str) -> Result<()> {
        let views = self.engine().views()?;
        match views
            .iter()
            .find(|v| v.depends_on.iter().any(|d| d == table))
        {
            Some(view) => Err(SqlError::unsupported(format!(
                "renaming table {table} or its columns while view {} reads it (SteadyDB keeps \
                 views as their text: drop the view, rename, and create it again)",
                view.name
            ))),
            None => Ok(()),
        }
    }
}

/// `table` with foreign key `name` referencing the table now called `parent`.
fn rename_foreign_key_parent(table: &TableDef, name: &str, parent: &str) -> TableDef {
    let mut renamed = table.clone();
    for text in &mut renamed.constraints {
        if let Ok(Constraint::ForeignKey(mut fk)) = serde_json::from_str(text) {
            if fk.name == name {
                fk.table = parent.to_string();
                *text = constraints::encode(&Constraint::ForeignKey(fk));
            }
        }
    }
    renamed
}

/// An index's hidden column named after its expression text (and, for a partial index, its
/// predicate), named after the texts with `old` renamed; any other column's name as it is.
fn renamed_index_column(name: &str, old: &str, new: &str) -> Result<String> {
    if let Some(expression) = column_expression(name) {
        return Ok(constraints::expression_column(&renamed_in(
            expression, old, new,
        )?));
    }
    if let Some((element, predicate)) = column_partial(name) {
        return Ok(constraints::partial_column(
            &renamed_in(element, old, new)?,
            &renamed_in(predicate, old, new)?,
        ));
    }
    Ok(name.to_string())
}

/// Expression `text` (over one table's columns) with column `old` read as `new`.
fn renamed_in(text: &str, old: &str, new: &str) -> Result<String> {
    let mut expr = parse_expr(text)?;
    let mut renamer = ColumnRenamer { old, new };
    let _ = expr.visit(&mut renamer);
    Ok(expr.to_string())
}

/// Rewrites the identifiers naming column `old` (alone, or the last part of a qualified name).
struct ColumnRenamer<'a> {
    old: &'a str,
    new: &'a str,
}

impl VisitorMut for ColumnRenamer<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut AstExpr) -> ControlFlow<()> {
        let ident = match expr {
            AstExpr::Identifier(ident) => Some(ident),
            AstExpr::CompoundIdentifier(parts) => parts.last_mut(),
            _ => None,
        };
        if let Some(ident) = ident.filter(|i| normalize_ident(i) == self.old) {
            *ident = column_ident(self.new);
        }
        ControlFlow::Continue(())
    }
}

/// An identifier that reads back as `name`: quoted unless it is a plain lower-case name that is
/// no keyword.
fn column_ident(name: &str) -> Ident {
    let plain = crate::types::is_plain_identifier(name)
        && sqlparser::keywords::ALL_KEYWORDS
            .binary_search(&name.to_ascii_uppercase().as_str())
            .is_err();
    if plain {
        Ident::new(name)
    } else {
        Ident::with_quote('"', name)
    }
}
