//! `CREATE [OR REPLACE] VIEW` and `DROP VIEW`, and the rule that keeps views readable: a table or
//! view that views read cannot be dropped (2BP01) unless with CASCADE, which drops those views
//! too, and a column cannot be dropped from a table that views read.
//!
//! A view is stored as its query's text, its columns (names and types) and the relations its
//! query named (see `steady_engine::view`). `OR REPLACE` keeps the old columns, in order, with
//! their names and types, and may add columns after them (PostgreSQL's rule). Refused with 0A000:
//! TEMPORARY views. Writes through a view: `planner::view_write`; `WITH [CASCADED | LOCAL] CHECK
//! OPTION` (or `WITH (check_option = ...)`) is kept in the view and needs an updatable view.

use steady_engine::view::{CheckOption, ViewDef};
use steady_types::DataType;

use super::Ddl;
use crate::error::{Result, SqlError};
use crate::planner::bind::Binder;
use crate::session::QueryResult;
use crate::system::public_object_name;
use crate::types::normalize_ident;
use sqlparser::ast;

impl Ddl<'_> {
    pub(super) fn create_view(&self, create: &ast::CreateView) -> Result<QueryResult> {
        if create.materialized {
            return Err(SqlError::unsupported("materialized views"));
        }
        if create.temporary {
            return Err(SqlError::unsupported("temporary views"));
        }
        let name = public_object_name(&create.name)?;
        if let Some(skipped) = self.existing_view(&name, create)? {
            return Ok(skipped);
        }
        let mut binder = Binder::new(self.engine(), self.db.stats(), Vec::new());
        let bound = binder.bind_query(&create.query)?;
        if !binder.params.is_empty() {
            return Err(SqlError::new(
                "42P02",
                "there is no parameter $1 in a view definition",
            ));
        }
        let mut depends_on = binder.relations_read;
        depends_on.sort();
        depends_on.dedup();
        if depends_on.contains(&name) {
            return Err(SqlError::new(
                "42P17",
                format!("infinite recursion detected in rules for relation \"{name}\""),
            ));
        }
        let listed: Vec<String> = create
            .columns
            .iter()
            .map(|c| normalize_ident(&c.name))
            .collect();
        let columns = super::named_columns(
            &listed,
            &bound.columns,
            "CREATE VIEW specifies more column names than columns",
        )?;
        if let Some(old) = self.engine().view(&name)? {
            check_replacement(&old.columns, &columns)?;
        }
        let view = ViewDef {
            id: 0,
            name,
            query: create.query.to_string(),
            columns,
            depends_on,
            check_option: Self::check_option(&create.options)?,
        };
        if view.check_option.is_some() {
            crate::planner::view_write::require_updatable(&view)?;
        }
        self.txn().create_view(view, create.or_replace)?;
        Ok(QueryResult::command("CREATE VIEW"))
    }

    /// The view's `check_option` (`WITH [CASCADED | LOCAL] CHECK OPTION`, or `WITH (check_option =
    /// ...)`); 22023 for another value, 0A000 for another option (none is kept).
    fn check_option(options: &ast::CreateTableOptions) -> Result<Option<CheckOption>> {
        let ast::CreateTableOptions::With(options) = options else {
            return Ok(None);
        };
        let mut check = None;
        for option in options {
            let ast::SqlOption::KeyValue { key, value } = option else {
                return Err(SqlError::unsupported(format!("view option {option}")));
            };
            if normalize_ident(key) != "check_option" {
                return Err(SqlError::unsupported(format!("view option {key}")));
            }
            let text = match value {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::SingleQuotedString(s) => s.to_lowercase(),
                    other => other.to_string().to_lowercase(),
                },
                ast::Expr::Identifier(ident) => normalize_ident(ident),
                other => other.to_string(),
            };
            check = Some(match text.as_str() {
                "local" => CheckOption::Local,
                "cascaded" => CheckOption::Cascaded,
                _ => {
                    return Err(SqlError::new(
                        "22023",
                        "invalid value for enum option \"check_option\": ".to_owned() + &text,
                    )
                    .with_detail("Valid values are \"local\" and \"cascaded\"."))
                }
            });
        }
        Ok(check)
    }

    /// A relation of that name: an error (a table; a view without OR REPLACE or IF NOT EXISTS),
    /// or IF NOT EXISTS's notice.
    fn existing_view(&self, name: &str, create: &ast::CreateView) -> Result<Option<QueryResult>> {
        if self.engine().table(name).is_some() {
            return Err(SqlError::new(
                if create.or_replace { "42809" } else { "42P07" },
                if create.or_replace {
                    format!("\"{name}\" is not a view")
                } else {
                    format!("relation \"{name}\" already exists")
                },
            ));
        }
        if self.engine().view(name)?.is_none() || create.or_replace {
            return Ok(None);
        }
        if create.if_not_exists {
            return Ok(Some(QueryResult::command("CREATE VIEW").with_notice(
                "NOTICE",
                "42P07",
                format!("relation \"{name}\" already exists, skipping"),
            )));
        }
        Err(SqlError::new(
            "42P07",
            format!("relation \"{name}\" already exists"),
        ))
    }

    pub(super) fn drop_views(
        &self,
        names: &[ast::ObjectName],
        if_exists: bool,
        cascade: bool,
    ) -> Result<QueryResult> {
        let (names, mut result) =
            super::drop_names(names, if_exists, "view", QueryResult::command("DROP VIEW"))?;
        for name in &names {
            if let Some(table) = self.engine().table(name) {
                let hint = match table.materialized {
                    Some(_) => "Use DROP MATERIALIZED VIEW to remove a materialized view.",
                    None => "Use DROP TABLE to remove a table.",
                };
                return Err(
                    SqlError::new("42809", format!("\"{name}\" is not a view")).with_hint(hint)
                );
            }
            if self.engine().view(name)?.is_none() && !if_exists {
                return Err(SqlError::new(
                    "42P01",
                    format!("view \"{name}\" does not exist"),
                ));
            }
        }
        result = self.release_dependents(&names, "view", cascade, result)?;
        for name in &names {
            if !self.txn().drop_view(name)? {
                result = result.with_notice(
                    "NOTICE",
                    "00000",
                    format!("view \"{name}\" does not exist, skipping"),
                );
            }
        }
        Ok(result)
    }

    /// The views and materialized views whose queries read a relation `reads` accepts: name,
    /// whether materialized, and what it reads.
    fn readers(&self, reads: impl Fn(&str) -> bool) -> Result<Vec<Reader>> {
        let views = self.engine().views()?.into_iter().map(|v| Reader {
            name: v.name,
            materialized: false,
            depends_on: v.depends_on,
        });
        let materialized = self.engine().tables().into_iter().filter_map(|t| {
            t.materialized.as_ref().map(|m| Reader {
                name: t.name.clone(),
                materialized: true,
                depends_on: m.depends_on.clone(),
            })
        });
        Ok(views
            .chain(materialized)
            .filter(|r| r.depends_on.iter().any(|d| reads(d)))
            .collect())
    }

    /// Before `names` (of `kind`) are dropped: fails with 2BP01 if views or materialized views
    /// read them, or with `cascade` drops those (and what reads them in turn) and says so on
    /// `result` as PostgreSQL does.
    pub(super) fn release_dependents(
        &self,
        names: &[String],
        kind: &str,
        cascade: bool,
        result: QueryResult,
    ) -> Result<QueryResult> {
        let mut dropped = Vec::new();
        self.drop_readers(names, kind, cascade, &mut dropped)?;
        Ok(match dropped.as_slice() {
            [] => result,
            [one] => result.with_notice("NOTICE", "00000", format!("drop cascades to {one}")),
            many => {
                let each: Vec<String> = many
                    .iter()
                    .map(|d| format!("drop cascades to {d}"))
                    .collect();
                result.with_notice_detail(
                    "NOTICE",
                    "00000",
                    format!("drop cascades to {} other objects", many.len()),
                    each.join("\n"),
                )
            }
        })
    }

    /// The views and materialized views reading `names`, dropped (with `cascade`, described on
    /// `dropped`) or refused (2BP01).
    fn drop_readers(
        &self,
        names: &[String],
        kind: &str,
        cascade: bool,
        dropped: &mut Vec<String>,
    ) -> Result<()> {
        let dependents: Vec<Reader> = self
            .readers(|d| names.iter().any(|n| n == d))?
            .into_iter()
            .filter(|r| !names.contains(&r.name))
            .collect();
        if dependents.is_empty() {
            return Ok(());
        }
        if !cascade {
            let lines: Vec<String> = dependents
                .iter()
                .map(|r| {
                    let depended = r.depends_on.iter().find(|d| names.contains(d));
                    format!(
                        "{} {} depends on {kind} {}",
                        r.kind(),
                        r.name,
                        depended.map_or("", |d| d)
                    )
                })
                .collect();
            let depended = dependents[0].depends_on.iter().find(|d| names.contains(d));
            return Err(SqlError::new(
                "2BP01",
                format!(
                    "cannot drop {kind} {} because other objects depend on it",
                    depended.map_or("", |d| d)
                ),
            )
            .with_detail(lines.join("\n"))
            .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
        }
        let dependent_names: Vec<String> = dependents.iter().map(|r| r.name.clone()).collect();
        for reader in &dependents {
            dropped.push(format!("{} {}", reader.kind(), reader.name));
        }
        self.drop_readers(&dependent_names, "view", true, dropped)?;
        for reader in &dependents {
            match reader.materialized {
                true => drop(self.txn().drop_table(&reader.name)?),
                false => drop(self.txn().drop_view(&reader.name)?),
            }
        }
        Ok(())
    }

    /// Fails with 2BP01 if a view or materialized view reads `table` (whose columns are about to
    /// change).
    pub(super) fn refuse_if_viewed(&self, table: &str, column: &str) -> Result<()> {
        let readers = self.readers(|d| d == table)?;
        let Some(reader) = readers.first() else {
            return Ok(());
        };
        Err(SqlError::new(
            "2BP01",
            format!(
                "cannot drop column {column} of table {table} because other objects depend on it"
            ),
        )
        .with_detail(format!(
            "{} {} depends on table {table}",
            reader.kind(),
            reader.name
        ))
        .with_hint("Drop the view first."))
    }
}

/// A view or materialized view, as what it reads.
struct Reader {
    name: String,
    materialized: bool,
    depends_on: Vec<String>,
}

impl Reader {
    fn kind(&self) -> &'static str {
        if self.materialized {
            "materialized view"
        } else {
            "view"
        }
    }
}

/// PostgreSQL's rule for CREATE OR REPLACE VIEW: the old columns stay, in order, with their names
/// and types (42P16).
fn check_replacement(old: &[(String, DataType)], new: &[(String, DataType)]) -> Result<()> {
    if new.len() < old.len() {
        return Err(SqlError::new("42P16", "cannot drop columns from view"));
    }
    for ((old_name, old_type), (new_name, new_type)) in old.iter().zip(new) {
        if old_name != new_name {
            return Err(SqlError::new(
                "42P16",
                format!("cannot change name of view column \"{old_name}\" to \"{new_name}\""),
            ));
        }
        if old_type != new_type {
            return Err(SqlError::new(
                "42P16",
                format!(
                    "cannot change data type of view column \"{old_name}\" from {old_type} to {new_type}"
                ),
            ));
        }
    }
    Ok(())
}
