//! The planner: [`bind`] resolves names and types of a parsed statement into an
//! `execution::plan::Plan` ([`bind_write`] for INSERT, UPDATE and DELETE, [`bind_expr`] for expressions, [`binding`] for catalog syntax such as
//! `::regclass` and `ANY(array)`, [`json`] for the json operators); [`access`] picks index paths from predicates, [`join`] places
//! join conditions and WHERE conjuncts over joins and picks hash keys, and [`stats`] keeps
//! ANALYZE's statistics that estimates come from.

pub mod access;
pub mod bind;
pub(crate) mod bind_expr;
pub mod bind_write;
pub mod binding;
pub mod join;
pub mod json;
pub mod stats;
pub mod view_write;
