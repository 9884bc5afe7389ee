//! Roles and the privileges granted on relations, kept in the meta tree.
//!
//! ```text
//! meta tree key                   value
//! "role/" ++ name                 RoleDef as JSON
//! "acl/" ++ relation id u64 BE    Grants as JSON: grantee ("" for PUBLIC) -> privilege letters
//! ```
//!
//! The engine stores them; the SQL layer decides what they allow (`steady_sql`'s privileges
//! module). A role's password is kept only as PostgreSQL's SCRAM-SHA-256 verifier (salt,
//! iteration count, StoredKey, ServerKey — `pg_authid.rolpassword`'s format), from which a
//! client's proof can be checked but the password not recovered.
//!
//! Creating, changing and dropping a role, and granting or revoking, are writes of the
//! transaction that does them (undone with it) and bump the catalog generation, so kept plans
//! are checked again. Role statements claim the name `role/<name>`, grants the relation's own
//! name, so two transactions never change one of them at once. A relation's grants go with the
//! relation when it is dropped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::{Engine, Transaction};
use crate::error::{EngineError, Result};
use crate::version::IndexId;

const ROLE_PREFIX: &[u8] = b"role/";
const ACL_PREFIX: &[u8] = b"acl/";

/// A role (PostgreSQL's `pg_authid` row).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleDef {
    /// A number from the index-id space (so its oid is distinct from every relation's).
    pub id: IndexId,
    pub name: String,
    pub superuser: bool,
    pub login: bool,
    pub create_db: bool,
    pub create_role: bool,
    /// The SCRAM-SHA-256 verifier of its password; None: it has none (it cannot log in with
    /// password authentication).
    pub password: Option<String>,
}

/// The privileges granted on one relation: per grantee (`""` stands for PUBLIC) the letters
/// of PostgreSQL's `aclitem` (`r` SELECT, `a` INSERT, `w` UPDATE, `d` DELETE, `D` TRUNCATE,
/// `x` REFERENCES, `t` TRIGGER), in that canonical order.
pub type Grants = BTreeMap<String, String>;

fn role_key(name: &str) -> Vec<u8> {
    [ROLE_PREFIX, name.as_bytes()].concat()
}

fn acl_key(relation: IndexId) -> Vec<u8> {
    [ACL_PREFIX, &relation.to_be_bytes()[..]].concat()
}

/// The name a role statement claims (so concurrent changes of one role wait for each other).
fn role_claim(name: &str) -> String {
    format!("role/{name}")
}

impl Transaction {
    /// Creates role `role.name` (its `id` is assigned here); false if it exists already.
    pub fn create_role(&mut self, mut role: RoleDef) -> Result<bool> {
        let engine = self.engine();
        self.claim(&role_claim(&role.name))?;
        if engine.role(&role.name)?.is_some() {
            return Ok(false);
        }
        role.id = engine.allocate_index_id()?;
        self.save_role(&role)?;
        Ok(true)
    }

    /// Replaces role `role.name`'s attributes (its id kept); false if there is no such role.
    pub fn alter_role(&mut self, mut role: RoleDef) -> Result<bool> {
        let engine = self.engine();
        self.claim(&role_claim(&role.name))?;
        let Some(current) = engine.role(&role.name)? else {
            return Ok(false);
        };
        role.id = current.id;
        self.save_role(&role)?;
        Ok(true)
    }

    /// Drops role `name`; false if there is none. The caller checks that nothing is granted to
    /// it ([`Engine::relations_granted_to`]).
    pub fn drop_role(&mut self, name: &str) -> Result<bool> {
        let engine = self.engine();
        self.claim(&role_claim(name))?;
        if engine.role(name)?.is_none() {
            return Ok(false);
        }
        self.write_catalog(&role_key(name), None)?;
        crate::catalog::changed();
        Ok(true)
    }

    /// Replaces the grants on relation `relation` (called `name`; its claim is taken).
    pub fn set_grants(&mut self, relation: IndexId, name: &str, grants: &Grants) -> Result<()> {
        self.claim(name)?;
        let value = match grants.is_empty() {
            true => None,
            false => Some(encode(grants)?),
        };
        self.write_catalog(&acl_key(relation), value.as_deref())?;
        crate::catalog::changed();
        Ok(())
    }

    /// Forgets the grants on a relation being dropped.
    pub(crate) fn drop_grants(&mut self, relation: IndexId) -> Result<()> {
        if self.engine().meta.get(&acl_key(relation))?.is_some() {
            self.write_catalog(&acl_key(relation), None)?;
        }
        Ok(())
    }

    fn save_role(&mut self, role: &RoleDef) -> Result<()> {
        self.write_catalog(&role_key(&role.name), Some(&encode(role)?))?;
        crate::catalog::changed();
        Ok(())
    }
}

impl Engine {
    /// The role called `name`, if there is one.
    pub fn role(&self, name: &str) -> Result<Option<RoleDef>> {
        self.meta
            .get(&role_key(name))?
            .map(|json| decode(&json, "role"))
            .transpose()
    }

    /// Every role, by name.
    pub fn roles(&self) -> Result<Vec<RoleDef>> {
        self.meta_prefix(ROLE_PREFIX)?
            .into_iter()
            .map(|(_, value)| decode(&value, "role"))
            .collect()
    }

    /// The grants on relation `relation` (none: empty).
    pub fn grants(&self, relation: IndexId) -> Result<Grants> {
        match self.meta.get(&acl_key(relation))? {
            Some(json) => decode(&json, "grants"),
            None => Ok(Grants::new()),
        }
    }

    /// Every relation with grants, and its grants.
    pub fn all_grants(&self) -> Result<Vec<(IndexId, Grants)>> {
        self.meta_prefix(ACL_PREFIX)?
            .into_iter()
            .map(|(key, value)| {
                let id = key[ACL_PREFIX.len()..]
                    .try_into()
                    .map(IndexId::from_be_bytes)
                    .map_err(|_| EngineError::Corrupt("grants key".into()))?;
                Ok((id, decode(&value, "grants")?))
            })
            .collect()
    }

    /// The relations that grant role `name` anything.
    pub fn relations_granted_to(&self, name: &str) -> Result<Vec<IndexId>> {
        Ok(self
            .all_grants()?
            .into_iter()
            .filter(|(_, grants)| grants.contains_key(name))
            .map(|(id, _)| id)
            .collect())
    }

    /// The meta tree's entries whose keys start with `prefix`, in key order.
    pub(crate) fn meta_prefix(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut entries = Vec::new();
        for entry in self.meta.range(
            std::ops::Bound::Included(prefix),
            std::ops::Bound::Unbounded,
        ) {
            let (key, value) = entry?;
            if !key.starts_with(prefix) {
                break;
            }
            entries.push((key, value));
        }
        Ok(entries)
    }
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| EngineError::Corrupt(e.to_string()))
}

fn decode<T: for<'de> Deserialize<'de>>(json: &[u8], what: &str) -> Result<T> {
    serde_json::from_slice(json).map_err(|e| EngineError::Corrupt(format!("{what} entry: {e}")))
}
