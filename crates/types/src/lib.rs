//! SQL data types and values: what a column can hold, how a value looks as PostgreSQL text, how text
//! becomes a value, how values convert (casts) and how they compare.
//!
//! This crate owns the *meaning* of values; `codec` owns their bytes. Everything here follows
//! PostgreSQL 15 so that psql, drivers and the regression habits of users see the answers they
//! expect, including SQLSTATEs and message texts of errors.
//!
//! # Types and their values
//!
//! | `DataType`                    | PostgreSQL name               | `Value` variant    | range / representation                       |
//! |-------------------------------|-------------------------------|--------------------|----------------------------------------------|
//! | `Boolean`                     | `boolean`                     | `Boolean(bool)`    |                                              |
//! | `SmallInt`                    | `smallint`                    | `SmallInt(i16)`    |                                              |
//! | `Integer`                     | `integer`                     | `Integer(i32)`     |                                              |
//! | `BigInt`                      | `bigint`                      | `BigInt(i64)`      |                                              |
//! | `Real`                        | `real`                        | `Real(f32)`        | IEEE, incl. `NaN`, `±Infinity`, `-0`         |
//! | `Double`                      | `double precision`            | `Double(f64)`      | IEEE, incl. `NaN`, `±Infinity`, `-0`         |
//! | `Numeric{precision, scale}`   | `numeric[(p,s)]`              | `Numeric(Decimal)` | 96-bit mantissa (~28 digits), scale 0..=28   |
//! | `Char(n)`                     | `character(n)`                | `Text(String)`     | exactly n characters, space padded           |
//! | `Varchar(n)`                  | `character varying[(n)]`      | `Text(String)`     | at most n characters                         |
//! | `Text`                        | `text`                        | `Text(String)`     |                                              |
//! | `Bytea`                       | `bytea`                       | `Bytea(Vec<u8>)`   |                                              |
//! | `Date`                        | `date`                        | `Date(i32)`        | days since 2000-01-01; `i32::MIN/MAX` = ∓infinity |
//! | `Timestamp`                   | `timestamp without time zone` | `Timestamp(i64)`   | µs since 2000-01-01 00:00:00; `i64::MIN/MAX` = ∓infinity |
//! | `TimestampTz`                 | `timestamp with time zone`    | `TimestampTz(i64)` | µs since 2000-01-01 00:00 UTC (see [`zone`]) |
//! | `Time`                        | `time without time zone`      | `Time(i64)`        | µs since midnight, `0..=24:00:00` (see `clock`) |
//! | `Uuid`                        | `uuid`                        | `Uuid([u8; 16])`   | ordered by bytes                             |
//! | `Interval`                    | `interval`                    | `Interval(Interval)` | months, days, µs; ordered by span (see [`interval`]) |
//! | `Json`                        | `json`                        | `Json(String)`     | the JSON text as given (see [`json`])        |
//! | `Jsonb`                       | `jsonb`                       | `Jsonb(String)`    | canonical JSON text; jsonb's order (see [`json`]) |
//! | `TextArray`                   | `text[]`                      | `Text(String)`     | the array's text form, one dimension (`array_agg` of strings) |
//! | `Array(e)`                    | `integer[]`, `boolean[]`, ... | `Text(String)`     | canonical text form, each element as type `e` writes it |
//!
//! `Null` belongs to every type. Dates run from 4714-11-24 BC to 5874897-12-31 and timestamps from
//! 4714-11-24 BC to 294276-12-31, as in PostgreSQL; the calendar is the proleptic Gregorian one, and
//! year 0 is written `0001 BC`.
//!
//! # Text formats (output, `Display` / `to_pg_text`)
//!
//! | type             | output                                    | example                        |
//! |------------------|-------------------------------------------|--------------------------------|
//! | boolean          | `t` / `f`                                 | `t`                            |
//! | integers         | decimal                                   | `-42`                          |
//! | real, double     | shortest text that reads back exactly; scientific when the decimal exponent is < -4 or ≥ 6 (real) / 15 (double) | `0.1`, `1e+15`, `1.5e-05`, `NaN`, `-Infinity` |
//! | numeric          | plain decimal with the value's scale      | `1.50`                         |
//! | char/varchar/text| the string                                | `abc`                          |
//! | bytea            | `\x` then lowercase hex                   | `\x00ff`                       |
//! | date             | `YYYY-MM-DD[ BC]`                         | `2024-02-29`                   |
//! | timestamp        | `YYYY-MM-DD HH:MM:SS[.ffffff][ BC]`, trailing zeros of the fraction dropped | `2024-02-29 13:05:00.25` |
//! | time             | `HH:MM:SS[.ffffff]`, trailing zeros of the fraction dropped | `13:05:00.25`        |
//!
//! Input (`Value::parse`) accepts, around surrounding whitespace: booleans `t/true/y/yes/on/1`,
//! `f/false/n/no/off/0` and their unambiguous prefixes in any case; integers with a sign; floats
//! with exponent, `Infinity`, `-Infinity`, `inf`, `NaN`; numerics with exponent; dates
//! `YYYY-MM-DD[ BC]`; timestamps `YYYY-MM-DD[( |T)HH:MM[:SS[.f…]]][ BC]`; `infinity`, `-infinity`
//! and `epoch` for both; times `HH:MM[:SS[.f…]][ AM|PM]` (a zone after them ignored), `allballs`;
//! bytea in hex (`\x…`) and escape (`\\`, `\ooo`) formats.
//!
//! # Invariants
//!
//! - A value stored in a column has been through [`Value::assign_to`] for that column's type, so a
//!   `Char(n)` value has exactly n characters and a `Numeric{precision: Some(_), scale}` value has
//!   exactly that scale. The codecs rely on it.
//! - `==` on `Value` is identity of representation (floats by bits, numerics by value *and* scale);
//!   SQL equality and order are [`Value::compare`].
//! - Strings compare byte-wise (the C collation); numbers compare across widths; `NaN` equals
//!   `NaN` and sorts above `+Infinity`; `-0` equals `0`; a date compares with a timestamp as its
//!   midnight.
//! - Numeric has no `NaN`/`Infinity` (rust_decimal cannot hold them): such input is refused with
//!   SQLSTATE 0A000 rather than silently changed.
//!
//! Modules: [`value`] (types, values, errors), [`output`] and [`input`] (text forms),
//! [`calendar`], [`cast`] and [`compare`].

pub mod array;
pub mod bytea;
mod calendar;
mod cast;
mod clock;
mod compare;
pub mod enums;
mod input;
pub mod interval;
pub mod json;
mod output;
#[cfg(test)]
mod tests;
mod uuid;
mod value;
pub mod zone;

pub use calendar::{
    civil_from_days, days_from_civil, days_in_month, use_date_order, DateOrder, PG_EPOCH_UNIX_DAYS,
    USECS_PER_DAY,
};
pub use clock::add_interval_to_time;
pub use interval::Interval;
pub use uuid::random_uuid;
pub use value::{ArrayElement, DataType, TypeError, Value};

// The modules share their crate-visible helpers through the crate root.
use calendar::*;
use cast::*;
use clock::*;
use compare::*;
use input::*;
use value::*;
