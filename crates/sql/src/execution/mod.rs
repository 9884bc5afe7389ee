//! Execution: a [`plan::Plan`] is the instruction set the planner targets and the
//! [`executor`] runs, pulling rows through [`expr`]essions, [`functions`] (the json ones in
//! [`json`]) and [`aggregate`]s, with
//! [`write`] nodes for INSERT, UPDATE and DELETE and [`constraints`] checked on them; [`cancel`]
//! stops a running statement, [`activity`] records what every session does (pg_stat_activity),
//! [`window`] computes window functions, and [`settings`] holds the session settings statements
//! read. Nothing here binds names: it depends only on `types`.

pub mod activity;
pub mod aggregate;
pub mod bitwise;
pub mod cancel;
pub mod constraints;
pub mod datetime_functions;
pub mod executor;
pub mod expr;
pub mod fk_checks;
pub mod float_math;
pub mod formatting;
pub mod functions;
pub mod json;
pub mod numeric_math;
pub mod plan;
pub mod privileges;
pub mod random;
pub mod regex;
pub mod regression;
pub mod sequences;
pub mod set_functions;
pub mod settings;
pub mod statements;
pub mod table_activity;
pub mod window;
pub mod write;
