//! Views: named queries, kept in the meta tree as their SQL text and the columns they return.
//!
//! ```text
//! meta tree key        value
//! "view/" ++ name      ViewDef as JSON
//! ```
//!
//! The engine stores and names views; the SQL layer binds their text wherever a view is named
//! (so a view is always read through the current definitions of its tables), checks a
//! replacement's columns, and keeps the dependencies in [`ViewDef::depends_on`] from being
//! dropped from under it. A view and a table never share a name: both are created under the DDL
//! lock, each checking the other's names. Creating, replacing and dropping a view is a write of
//! the transaction that does it, undone with it, and bumps the catalog generation, so kept plans
//! are bound again.

use serde::{Deserialize, Serialize};
use steady_types::DataType;

use crate::engine::{Engine, Transaction};
use crate::error::{EngineError, Result};
use crate::version::IndexId;

const VIEW_PREFIX: &[u8] = b"view/";

/// A view's definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewDef {
    /// A number from the index-id space (so its oid is distinct from every table's).
    pub id: IndexId,
    pub name: String,
    /// The query, as SQL text.
    pub query: String,
    /// The columns it returns: names and types.
    pub columns: Vec<(String, DataType)>,
    /// The tables and views its query reads.
    pub depends_on: Vec<String>,
    /// `WITH [CASCADED | LOCAL] CHECK OPTION`: rows written through the view must be rows it
    /// shows (the SQL layer's `planner::view_write` keeps it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_option: Option<CheckOption>,
}

/// Which views' conditions a row written through a view with a check option must satisfy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CheckOption {
    /// The view's own (and those of views under it that have a check option themselves).
    Local,
    /// The view's and those of every view under it.
    Cascaded,
}

fn view_key(name: &str) -> Vec<u8> {
    let mut key = VIEW_PREFIX.to_vec();
    key.extend_from_slice(name.as_bytes());
    key
}

impl Transaction {
    /// Creates view `view.name` (its `id` is assigned here), or replaces it when `replace`. A
    /// table of that name, or an existing view without `replace`, is an error.
    pub fn create_view(&mut self, mut view: ViewDef, replace: bool) -> Result<ViewDef> {
        let engine = self.engine();
        self.claim(&view.name)?;
        let _ddl = engine.ddl.write();
        if engine.table(&view.name).is_some() {
            return Err(EngineError::DuplicateTable(view.name));
        }
        view.id = match engine.view(&view.name)? {
            Some(_) if !replace => return Err(EngineError::DuplicateTable(view.name)),
            Some(existing) => existing.id,
            None => engine.allocate_index_id()?,
        };
        let json = serde_json::to_vec(&view).map_err(|e| EngineError::Corrupt(e.to_string()))?;
        self.write_catalog(&view_key(&view.name), Some(&json))?;
        crate::catalog::changed();
        Ok(view)
    }

    /// Drops view `name`; false if there is none.
    pub fn drop_view(&mut self, name: &str) -> Result<bool> {
        let engine = self.engine();
        self.claim(name)?;
        let _ddl = engine.ddl.write();
        let Some(view) = engine.view(name)? else {
            return Ok(false);
        };
        self.drop_grants(view.id)?;
        self.write_catalog(&view_key(name), None)?;
        crate::catalog::changed();
        Ok(true)
    }
}

impl Engine {
    /// The view called `name`, if there is one.
    pub fn view(&self, name: &str) -> Result<Option<ViewDef>> {
        self.meta
            .get(&view_key(name))?
            .map(|json| decode(&json))
            .transpose()
    }

    /// Every view, by name.
    pub fn views(&self) -> Result<Vec<ViewDef>> {
        self.meta_prefix(VIEW_PREFIX)?
            .into_iter()
            .map(|(_, value)| decode(&value))
            .collect()
    }

    /// Whether a view of this name exists (checked by table creation, under the DDL lock).
    pub(crate) fn view_exists(&self, name: &str) -> Result<bool> {
        Ok(self.meta.get(&view_key(name))?.is_some())
    }
}

fn decode(json: &[u8]) -> Result<ViewDef> {
    serde_json::from_slice(json).map_err(|e| EngineError::Corrupt(format!("view entry: {e}")))
}
