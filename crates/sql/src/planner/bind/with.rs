//! WITH queries (common table expressions).
//!
//! A WITH query is bound where it is referenced, as a subquery in FROM would be, with the
//! scopes and WITH queries of its definition: enclosing queries' columns are not visible to it
//! (one that refers to them is refused), nor are later WITH queries of its list. A plain one is
//! inlined at each reference, so conditions on it reach its tables (PostgreSQL 12's NOT
//! MATERIALIZED); one that is MATERIALIZED or calls a volatile function is computed once per
//! statement and shared by its references ([`Plan::Materialized`]), so each reference sees the
//! same rows.
//!
//! An INSERT, UPDATE or DELETE in the statement's own WITH list (only there: 0A000 below it, as
//! in PostgreSQL) is bound where it is defined, with the WITH queries before it in scope, and
//! runs once, before the body, whether or not anything reads it ([`Plan::WithWrites`]); a
//! reference reads its RETURNING rows (0A000 without RETURNING). The body may itself be an
//! INSERT, UPDATE or DELETE. PostgreSQL runs every part of such a statement on one snapshot, so
//! no part sees another's changes; here a part would see the changes of a write before it, so a
//! table one write changes that another part reads or writes is refused (0A000) rather than
//! read differently.
//!
//! `WITH RECURSIVE name AS (anchor UNION [ALL] recursive)` whose recursive term reads `name`
//! becomes a [`Plan::RecursiveUnion`]: the recursive term reads the rows the previous round
//! added ([`Plan::WorkTable`]), only in its own FROM (not in a subquery: 42P19), and must give
//! each column the anchor's type (42804). Its rows stream round by round, so a LIMIT above an
//! endless recursion ends it, as in PostgreSQL.

use super::*;

/// A WITH query in scope.
#[derive(Debug, Clone)]
pub(crate) struct CteDef {
    name: String,
    query: ast::Query,
    alias: ast::TableAlias,
    /// The query level it is defined at (`scopes.len()` there).
    level: usize,
    /// How many WITH queries were in scope where it is defined (it sees only those).
    visible: usize,
    materialized: bool,
    recursive: bool,
    /// The key of its rows when computed once.
    id: usize,
    referenced: bool,
    /// An INSERT, UPDATE or DELETE, bound where it is defined (it runs once whether or not it is
    /// referenced).
    write: Option<CteWrite>,
}

/// A WITH query that writes: its plan, RETURNING columns, the table it writes and the tables it
/// reads.
#[derive(Debug, Clone)]
pub(crate) struct CteWrite {
    plan: Plan,
    columns: Vec<Column>,
    target: String,
    reads: Vec<String>,
}

/// The recursive term being bound: its WITH query's name, work table and columns, and the level
/// its FROM is at.
#[derive(Debug, Clone)]
pub(crate) struct Working {
    name: String,
    id: usize,
    columns: Vec<Column>,
    level: usize,
    used: bool,
}

impl Binder<'_> {
    /// Binds `query`, whose WITH queries are in scope for its body (and for later ones).
    pub(super) fn bind_with(&mut self, with: &ast::With, query: &ast::Query) -> Result<BoundQuery> {
        let top_level = std::mem::take(&mut self.top_level_with);
        let outer = self.ctes.len();
        let result = self.define_ctes(with, top_level).and_then(|()| {
            let body_reads = self.relations_read.len();
            let bound = self.bind_with_body(query, top_level)?;
            self.check_unreferenced(outer)?;
            self.writes_first(outer, bound, body_reads)
        });
        self.ctes.truncate(outer);
        result
    }

    /// The body after a WITH list: a query, or (the statement's own WITH only) a write.
    fn bind_with_body(&mut self, query: &ast::Query, top_level: bool) -> Result<BoundQuery> {
        match query.body.as_ref() {
            SetExpr::Insert(write) | SetExpr::Update(write) | SetExpr::Delete(write)
                if top_level =>
            {
                let bound = self.bind_statement(write)?;
                bound.ok_or_else(|| SqlError::unsupported(format!("query body {write}")))
            }
            _ => self.bind_query_body(query),
        }
    }

    /// `bound` run after the writes among the WITH queries from `first` on, if there are any
    /// (see [`Plan::WithWrites`]). Every part of the statement reads the tables as they were
    /// before it in PostgreSQL, but here a later part would see the changes of a write before it:
    /// a table one write changes that another part also reads or writes is refused (0A000).
    fn writes_first(
        &self,
        first: usize,
        bound: BoundQuery,
        body_reads: usize,
    ) -> Result<BoundQuery> {
        let writes: Vec<(usize, &CteWrite)> = self.ctes[first..]
            .iter()
            .filter_map(|d| d.write.as_ref().map(|w| (d.id, w)))
            .collect();
        if writes.is_empty() {
            return Ok(bound);
        }
        let body_target = written_table(&bound.plan);
        let body: Vec<&String> = self.relations_read[body_reads..]
            .iter()
            .chain(body_target.as_ref())
            .collect();
        for (at, (_, write)) in writes.iter().enumerate() {
            let others = writes.iter().enumerate().filter(|(other, _)| *other != at);
            let mut elsewhere = others
                .flat_map(|(_, (_, w))| w.reads.iter().chain([&w.target]))
                .chain(body.iter().copied());
            if elsewhere.any(|name| *name == write.target) {
                return Err(SqlError::unsupported(format!(
                    "a WITH query's write to table \"{}\" beside another part of the statement \
                     that reads or writes it (it would see the change, which PostgreSQL hides)",
                    write.target
                )));
            }
        }
        Ok(BoundQuery {
            plan: Plan::WithWrites {
                writes: writes
                    .into_iter()
                    .map(|(id, w)| (id, w.plan.clone()))
                    .collect(),
                body: Box::new(bound.plan),
            },
            columns: bound.columns,
            required: Vec::new(),
        })
    }

    /// Binds the WITH queries from `first` on that nothing referenced, for their errors only (as
    /// PostgreSQL checks every WITH query).
    fn check_unreferenced(&mut self, first: usize) -> Result<()> {
        for at in first..self.ctes.len() {
            if !self.ctes[at].referenced && self.ctes[at].write.is_none() {
                let def = self.ctes[at].clone();
                self.bind_cte(&def)?;
            }
        }
        Ok(())
    }

    fn define_ctes(&mut self, with: &ast::With, top_level: bool) -> Result<()> {
        let outer = self.ctes.len();
        for cte in &with.cte_tables {
            let name = normalize_ident(&cte.alias.name);
            if self.ctes[outer..].iter().any(|d| d.name == name) {
                return Err(SqlError::new(
                    "42712",
                    format!("WITH query name \"{name}\" specified more than once"),
                ));
            }
            let write = match cte.query.body.as_ref() {
                SetExpr::Select(_)
                | SetExpr::Query(_)
                | SetExpr::SetOperation { .. }
                | SetExpr::Values(_) => None,
                SetExpr::Insert(write) | SetExpr::Update(write) | SetExpr::Delete(write) => {
                    Some(self.bind_cte_write(write, top_level, with.recursive)?)
                }
                other => return Err(SqlError::unsupported(format!("WITH query {other}"))),
            };
            let id = self.next_id();
            self.ctes.push(CteDef {
                name,
                query: (*cte.query).clone(),
                alias: cte.alias.clone(),
                level: self.scopes.len(),
                visible: self.ctes.len() + usize::from(with.recursive),
                materialized: matches!(
                    cte.materialized,
                    Some(ast::CteAsMaterialized::Materialized)
                ),
                recursive: with.recursive,
                id,
                referenced: false,
                write,
            });
        }
        Ok(())
    }

    /// An INSERT, UPDATE or DELETE in a WITH list, bound with the WITH queries before it in
    /// scope. Only the statement's own WITH list may hold one (0A000, as PostgreSQL).
    fn bind_cte_write(
        &mut self,
        write: &ast::Statement,
        top_level: bool,
        recursive: bool,
    ) -> Result<CteWrite> {
        if !top_level {
            return Err(SqlError::new(
                "0A000",
                "WITH clause containing a data-modifying statement must be at the top level",
            ));
        }
        if recursive {
            return Err(SqlError::unsupported(
                "INSERT, UPDATE or DELETE in WITH RECURSIVE",
            ));
        }
        let reads = self.relations_read.len();
        let bound = self
            .bind_statement(write)?
            .ok_or_else(|| SqlError::unsupported(format!("WITH query {write}")))?;
        let target = written_table(&bound.plan).expect("a write binds to a write plan");
        Ok(CteWrite {
            target,
            reads: self.relations_read.split_off(reads),
            plan: bound.plan,
            columns: bound.columns,
        })
    }

    /// A plan and scope for a table name that is a WITH query (or the work table of the
    /// recursive term being bound), if it is one.
    pub(super) fn cte_source(
        &mut self,
        name: &str,
        alias: Option<&ast::TableAlias>,
    ) -> Result<Option<(Plan, Scope)>> {
        let alias_name =
            |default: &str| alias.map_or(default.to_owned(), |a| normalize_ident(&a.name));
        if let Some(working) = self.working.as_mut().filter(|w| w.name == name) {
            if working.level != self.scopes.len() {
                return Err(SqlError::new(
                    "42P19",
                    format!(
                        "recursive reference to query \"{name}\" must not appear within a subquery"
                    ),
                ));
            }
            working.used = true;
            let columns =
                crate::planner::bind::from::apply_column_aliases(working.columns.clone(), alias);
            let plan = Plan::WorkTable { id: working.id };
            return Ok(Some((plan, Scope::of_table(&alias_name(name), &columns))));
        }
        let Some(at) = self.ctes.iter().rposition(|d| d.name == name) else {
            return Ok(None);
        };
        self.ctes[at].referenced = true;
        let def = self.ctes[at].clone();
        let (plan, columns) = match &def.write {
            Some(write) => write_reference(&def, write)?,
            None => self.bind_cte(&def)?,
        };
        let columns = crate::planner::bind::from::apply_column_aliases(columns, alias);
        Ok(Some((plan, Scope::of_table(&alias_name(name), &columns))))
    }

    /// The WITH query `def` bound with what its definition sees (see the module doc).
    fn bind_cte(&mut self, def: &CteDef) -> Result<(Plan, Vec<Column>)> {
        let later = self.ctes.split_off(def.visible.min(self.ctes.len()));
        let inner = self.scopes.split_off(def.level.min(self.scopes.len()));
        let correlated = self.correlated.clone();
        let volatile = std::mem::replace(&mut self.volatile_seen, false);
        let bound = self.bind_cte_body(def);
        let cte_volatile = std::mem::replace(&mut self.volatile_seen, volatile);
        self.volatile_seen |= cte_volatile;
        self.correlated = correlated;
        self.scopes.extend(inner);
        self.ctes.extend(later);
        let (plan, columns) = bound?;
        let named = def.alias.columns.len();
        if named > columns.len() {
            return Err(SqlError::new(
                "42P10",
                format!(
                    "WITH query \"{}\" has {} columns available but {named} columns specified",
                    def.name,
                    columns.len()
                ),
            ));
        }
        let columns = crate::planner::bind::from::apply_column_aliases(columns, Some(&def.alias));
        let plan = match def.materialized || cte_volatile {
            true => Plan::Materialized {
                id: def.id,
                input: Box::new(plan),
            },
            false => plan,
        };
        Ok((plan, columns))
    }

    /// The WITH query's plan and columns.
    fn bind_cte_body(&mut self, def: &CteDef) -> Result<(Plan, Vec<Column>)> {
        if def.recursive {
            if let Some(recursive) = self.bind_recursive(def)? {
                return Ok((recursive.plan, recursive.columns));
            }
        }
        let (bound, correlated) = self.bind_subquery(&def.query)?;
        refuse_correlated(def, correlated)?;
        Ok((bound.plan, bound.columns))
    }

    /// `anchor UNION [ALL] recursive` as a recursive union, if the recursive term reads the
    /// WITH query itself; None when the query is not of that form or does not.
    fn bind_recursive(&mut self, def: &CteDef) -> Result<Option<BoundQuery>> {
        let query = &def.query;
        let SetExpr::SetOperation {
            op: ast::SetOperator::Union,
            left,
            right,
            set_quantifier,
        } = query.body.as_ref()
        else {
            return Ok(None);
        };
        if query.order_by.is_some() || query.limit_clause.is_some() || query.with.is_some() {
            return Ok(None);
        }
        let (anchor, correlated) = self.bind_set_expr_at_new_level(left)?;
        refuse_correlated(def, correlated)?;
        let named = crate::planner::bind::from::apply_column_aliases(
            anchor.columns.clone(),
            Some(&def.alias),
        );
        let work_id = self.next_id();
        let working = Working {
            name: def.name.clone(),
            id: work_id,
            columns: named,
            level: self.scopes.len(),
            used: false,
        };
        let saved = self.working.replace(working);
        let term = self.bind_set_expr_at_new_level(right);
        let working = std::mem::replace(&mut self.working, saved);
        let (term, correlated) = term?;
        refuse_correlated(def, correlated)?;
        if !working.as_ref().is_some_and(|w| w.used) {
            return Ok(None);
        }
        let named = working.map(|w| w.columns).unwrap_or_default();
        check_recursive_types(def, &named, &term.columns)?;
        let all = matches!(set_quantifier, ast::SetQuantifier::All);
        Ok(Some(BoundQuery {
            plan: Plan::RecursiveUnion {
                id: work_id,
                anchor: Box::new(anchor.plan),
                recursive: Box::new(term.plan),
                all,
            },
            columns: anchor.columns,
            required: Vec::new(),
        }))
    }

    /// Binds a set expression one level down, as `bind_subquery` binds a query.
    fn bind_set_expr_at_new_level(&mut self, body: &SetExpr) -> Result<(BoundQuery, bool)> {
        let level = self.scopes.len();
        self.correlated.truncate(level);
        let bound = self.bind_set_expr(body);
        let correlated = self.correlated.get(level).copied().unwrap_or(false);
        self.correlated.truncate(level);
        Ok((bound?, correlated))
    }

    fn next_id(&mut self) -> usize {
        let id = self.next_subquery;
        self.next_subquery += 1;
        id
    }
}

fn refuse_correlated(def: &CteDef, correlated: bool) -> Result<()> {
    match correlated {
        true => Err(SqlError::unsupported(format!(
            "WITH query \"{}\" referring to columns of an enclosing query",
            def.name
        ))),
        false => Ok(()),
    }
}

/// The recursive term gives each column the anchor's type, or a width mismatch (42804, as
/// PostgreSQL).
fn check_recursive_types(def: &CteDef, anchor: &[Column], term: &[Column]) -> Result<()> {
    if anchor.len() != term.len() {
        return Err(SqlError::syntax(
            "each UNION query must have the same number of columns",
        ));
    }
    for (a, t) in anchor.iter().zip(term) {
        let differs = match (a.ty, t.ty) {
            (Some(a), Some(t)) => a != t,
            _ => false,
        };
        if differs {
            return Err(SqlError::new(
                "42804",
                format!(
                    "recursive query \"{}\" column \"{}\" has type {} in non-recursive term but type {} overall",
                    def.name,
                    a.name,
                    crate::types::type_name(a.ty),
                    crate::types::type_name(t.ty),
                ),
            ));
        }
    }
    Ok(())
}

/// The table a write plan writes.
fn written_table(plan: &Plan) -> Option<String> {
    match plan {
        Plan::Insert(insert) => Some(insert.table.name.clone()),
        Plan::Update(update) => Some(update.target.table.name.clone()),
        Plan::Delete(delete) => Some(delete.target.table.name.clone()),
        _ => None,
    }
}

/// A reference to a WITH query that writes: the rows its RETURNING gave (0A000 without one).
fn write_reference(def: &CteDef, write: &CteWrite) -> Result<(Plan, Vec<Column>)> {
    if write.columns.is_empty() {
        return Err(SqlError::new(
            "0A000",
            format!(
                "WITH query \"{}\" does not have a RETURNING clause",
                def.name
            ),
        ));
    }
    let columns =
        crate::planner::bind::from::apply_column_aliases(write.columns.clone(), Some(&def.alias));
    let plan = Plan::Materialized {
        id: def.id,
        input: Box::new(write.plan.clone()),
    };
    Ok((plan, columns))
}
