//! Enum types: `CREATE TYPE name AS ENUM (...)`, kept in the meta tree as JSON.
//!
//! ```text
//! meta tree key        value
//! "type/" ++ name      steady_types::enums::EnumType as JSON
//! ```
//!
//! A type's oid is drawn at random above every system oid when it is created; its labels are
//! only ever appended to (`ALTER TYPE ... ADD VALUE`), so a stored value, the position of its
//! label, keeps its meaning (see [`steady_types::enums`], whose process-wide registry this module
//! fills: at open, and as types are created or given labels). Creating, extending and dropping a
//! type is a write of the transaction that does it, undone with it; its name is claimed (as
//! `type NAME`) until then. A type a column uses cannot be dropped.

use steady_types::enums::{self, EnumType};
use steady_types::DataType;

use crate::engine::{Engine, Transaction};
use crate::error::{EngineError, Result};

const TYPE_PREFIX: &[u8] = b"type/";

/// The smallest oid an enum type gets: above PostgreSQL's system oids and this engine's
/// relation oids (`FirstNormalObjectId` is 16384; relations count up from there).
const FIRST_ENUM_OID: u32 = 1 << 30;

fn type_key(name: &str) -> Vec<u8> {
    let mut key = TYPE_PREFIX.to_vec();
    key.extend_from_slice(name.as_bytes());
    key
}

fn claim_name(name: &str) -> String {
    format!("type {name}")
}

impl Transaction {
    /// Creates enum type `name` with `labels` (distinct). A type of that name is an error.
    pub fn create_enum_type(&mut self, name: &str, labels: Vec<String>) -> Result<EnumType> {
        let engine = self.engine();
        self.claim(&claim_name(name))?;
        let _ddl = engine.ddl.write();
        if engine.enum_type(name)?.is_some() {
            return Err(EngineError::DuplicateType(name.to_owned()));
        }
        if let Some(repeated) = labels
            .iter()
            .enumerate()
            .find(|(i, l)| labels[..*i].contains(l))
        {
            return Err(EngineError::DuplicateLabel(repeated.1.clone()));
        }
        let created = EnumType {
            oid: FIRST_ENUM_OID + random_u32() % (u32::MAX - FIRST_ENUM_OID),
            name: name.to_owned(),
            labels,
        };
        self.save_type(&created)?;
        Ok(created)
    }

    /// Adds `label` after the labels of enum type `name` (nothing when it has it and
    /// `if_not_exists`).
    pub fn add_enum_label(&mut self, name: &str, label: &str, if_not_exists: bool) -> Result<()> {
        let engine = self.engine();
        self.claim(&claim_name(name))?;
        let _ddl = engine.ddl.write();
        let mut extended = engine
            .enum_type(name)?
            .ok_or_else(|| EngineError::NoSuchType(name.to_owned()))?;
        if extended.labels.iter().any(|l| l == label) {
            return match if_not_exists {
                true => Ok(()),
                false => Err(EngineError::DuplicateLabel(label.to_owned())),
            };
        }
        extended.labels.push(label.to_owned());
        self.save_type(&extended)
    }

    /// Drops enum type `name`; false if there is none. A column of a table using it refuses.
    pub fn drop_enum_type(&mut self, name: &str) -> Result<bool> {
        let engine = self.engine();
        self.claim(&claim_name(name))?;
        let _ddl = engine.ddl.write();
        let Some(dropped) = engine.enum_type(name)? else {
            return Ok(false);
        };
        for table in engine.tables() {
            let using = table
                .columns
                .iter()
                .find(|c| c.data_type == DataType::Enum(dropped.oid));
            if let Some(column) = using {
                return Err(EngineError::TypeInUse {
                    name: name.to_owned(),
                    table: table.name.clone(),
                    column: column.name.clone(),
                });
            }
        }
        self.write_catalog(&type_key(name), None)?;
        crate::catalog::changed();
        Ok(true)
    }

    fn save_type(&mut self, enum_type: &EnumType) -> Result<()> {
        let json =
            serde_json::to_vec(enum_type).map_err(|e| EngineError::Corrupt(e.to_string()))?;
        self.write_catalog(&type_key(&enum_type.name), Some(&json))?;
        enums::register(enum_type.clone());
        crate::catalog::changed();
        Ok(())
    }
}

impl Engine {
    /// The enum type called `name`, if there is one.
    pub fn enum_type(&self, name: &str) -> Result<Option<EnumType>> {
        self.meta
            .get(&type_key(name))?
            .map(|json| decode(&json))
            .transpose()
    }

    /// Every enum type, by name.
    pub fn enum_types(&self) -> Result<Vec<EnumType>> {
        self.meta_prefix(TYPE_PREFIX)?
            .into_iter()
            .map(|(_, value)| decode(&value))
            .collect()
    }

    /// Registers every enum type of the database (see [`steady_types::enums`]); run at open.
    pub(crate) fn register_enum_types(&self) -> Result<()> {
        for enum_type in self.enum_types()? {
            enums::register(enum_type);
        }
        Ok(())
    }
}

/// A random number (the standard library's per-process random hash keys, freshly drawn).
fn random_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish() as u32
}

fn decode(json: &[u8]) -> Result<EnumType> {
    serde_json::from_slice(json).map_err(|e| EngineError::Corrupt(format!("type entry: {e}")))
}
