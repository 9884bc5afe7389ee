//! Views in FROM: a view's stored query is parsed and bound where the view is named, as a subquery
//! under the view's name (or alias), so conditions on it reach its tables (`access::filter` passes
//! them through its projection) and it always reads its tables' current definitions. Its columns
//! are the ones stored at CREATE VIEW: a `SELECT *` view keeps its width after its table gains a
//! column (PostgreSQL's views expand `*` when created).
//!
//! The view's query is bound in isolation: it sees no enclosing query's columns and no WITH query
//! of the statement naming it, only tables and views. Views nest at most [`MAX_VIEW_DEPTH`] deep.
//!
//! A materialized view is a table to the binder; here are the two rules its reads and writes
//! keep (see `session::ddl::materialized`): no write but its REFRESH, no read before it is
//! populated.

use super::from::apply_column_aliases;
use super::*;

/// How deeply views may name views.
const MAX_VIEW_DEPTH: usize = 32;

impl Binder<'_> {
    /// The view `name` names, bound, if it is one.
    pub(super) fn view_source(
        &mut self,
        schema: Option<&str>,
        name: &str,
        alias: Option<&ast::TableAlias>,
    ) -> Result<Option<(Plan, Scope)>> {
        if !matches!(schema, None | Some("public")) || self.user_table(schema, name)?.is_some() {
            return Ok(None);
        }
        let Some(view) = self.engine.view(name)? else {
            return Ok(None);
        };
        self.relations_read.push(view.name.clone());
        self.require(view.id, &view.name, RelationKind::View, Privilege::Select);
        if self.view_depth >= MAX_VIEW_DEPTH {
            return Err(SqlError::new(
                "42P17",
                format!("infinite recursion detected in rules for relation \"{name}\""),
            ));
        }
        let query = view_query(&view.query)?;
        let bound = self.isolated(|binder| {
            binder.view_depth += 1;
            let bound = binder.bind_query(&query);
            binder.view_depth -= 1;
            bound
        })?;
        let width = view.columns.len();
        if bound.columns.len() < width {
            return Err(SqlError::new(
                "XX000",
                format!("view \"{name}\" no longer matches its tables"),
            ));
        }
        let plan = if bound.columns.len() > width {
            Plan::Project {
                input: Box::new(bound.plan),
                exprs: (0..width).map(Expr::Column).collect(),
            }
        } else {
            bound.plan
        };
        let columns: Vec<Column> = view
            .columns
            .iter()
            .map(|(name, ty)| Column::new(name.clone(), Some(*ty)))
            .collect();
        let alias_name = alias.map_or(view.name.clone(), |a| normalize_ident(&a.name));
        let columns = apply_column_aliases(columns, alias);
        Ok(Some((plan, Scope::of_table(&alias_name, &columns))))
    }

    /// Runs `f` with no enclosing scopes, WITH queries or select state, then restores them.
    pub(crate) fn isolated<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let scopes = std::mem::take(&mut self.scopes);
        let correlated = std::mem::take(&mut self.correlated);
        let ctes = std::mem::take(&mut self.ctes);
        let working = self.working.take();
        let aggregates = self.aggregates.take();
        let windows = self.windows.take();
        let named = std::mem::take(&mut self.named_windows);
        let result = f(self);
        self.scopes = scopes;
        self.correlated = correlated;
        self.ctes = ctes;
        self.working = working;
        self.aggregates = aggregates;
        self.windows = windows;
        self.named_windows = named;
        result
    }
}

/// A stored view query, parsed.
pub(crate) fn view_query(text: &str) -> Result<ast::Query> {
    let statements = crate::parser::parse(text)?;
    match statements.as_slice() {
        [crate::parser::Statement::Sql(statement)] => match statement.as_ref() {
            ast::Statement::Query(query) => Ok(query.as_ref().clone()),
            _ => Err(SqlError::new("XX000", "a view's definition is not a query")),
        },
        _ => Err(SqlError::new(
            "XX000",
            "a view's definition is not one query",
        )),
    }
}

/// 42809 for a write into a materialized view other than its REFRESH.
pub(crate) fn refuse_write(table: &TableDef) -> Result<()> {
    if table.materialized.is_some() {
        return Err(SqlError::new(
            "42809",
            format!("cannot change materialized view \"{}\"", table.name),
        ));
    }
    Ok(())
}

/// 55000: reading a materialized view created or refreshed WITH NO DATA.
pub(crate) fn refuse_unpopulated(table: &TableDef) -> Result<()> {
    match &table.materialized {
        Some(materialized) if !materialized.populated => Err(SqlError::new(
            "55000",
            format!(
                "materialized view \"{}\" has not been populated",
                table.name
            ),
        )
        .with_hint("Use the REFRESH MATERIALIZED VIEW command.")),
        _ => Ok(()),
    }
}
