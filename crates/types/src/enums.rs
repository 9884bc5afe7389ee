//! Enum types (`CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')`): a value is its type's oid and
//! the position of its label, so values order as the labels were declared and a stored one is
//! four bytes; its text is the label.
//!
//! The labels live in the process-wide registry of this module, filled by the engine when it
//! opens a database and when a type is created or given a label, so that text input and output
//! (`Value::parse`, `Display`) need no catalog at hand. Invariants: a type's oid is chosen at
//! random when it is created (never reused, so databases open in one process do not collide), and
//! its labels are only ever appended to — a position, once given, names one label for good —, so
//! the registry never has to forget or change what it was told.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;

/// An enum type: its oid, name and labels in declaration order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EnumType {
    pub oid: u32,
    pub name: String,
    pub labels: Vec<String>,
}

fn registry() -> &'static RwLock<HashMap<u32, Arc<EnumType>>> {
    static REGISTRY: OnceLock<RwLock<HashMap<u32, Arc<EnumType>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// Makes `enum_type` known (again: a later call with more labels replaces an earlier one).
pub fn register(enum_type: EnumType) {
    registry()
        .write()
        .insert(enum_type.oid, Arc::new(enum_type));
}

/// The enum type with oid `oid`, if one was registered.
pub fn enum_type(oid: u32) -> Option<Arc<EnumType>> {
    registry().read().get(&oid).cloned()
}

/// The label at `position` of type `oid` (`?` for one never registered: unreachable for values
/// read through a catalog that registered their type).
pub fn label(oid: u32, position: u32) -> String {
    enum_type(oid)
        .and_then(|t| t.labels.get(position as usize).cloned())
        .unwrap_or_else(|| "?".to_owned())
}

/// The name of type `oid`, as `format_type` writes it.
pub fn type_name(oid: u32) -> String {
    enum_type(oid).map_or_else(|| format!("enum {oid}"), |t| t.name.clone())
}

/// Text input: the position of label `text` of type `oid`; 22P02 for any other text.
pub fn parse(oid: u32, text: &str) -> Result<u32, crate::TypeError> {
    let position = enum_type(oid).and_then(|t| t.labels.iter().position(|l| l == text));
    position.map(|p| p as u32).ok_or_else(|| {
        crate::TypeError::InvalidTextRepresentation(format!(
            "invalid input value for enum {}: \"{text}\"",
            type_name(oid)
        ))
    })
}
