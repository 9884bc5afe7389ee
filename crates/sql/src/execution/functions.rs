//! Scalar functions: the registry the binder looks names up in, each with its argument count, its
//! result type and its evaluation.
//!
//! Functions are strict unless marked otherwise: a NULL argument gives NULL without calling the
//! body. Names are matched case-insensitively and may carry the `pg_catalog.` schema. Volatile
//! functions (`random`, `now`) are never folded at bind time.

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};
use steady_types::{civil_from_days, DataType, Value, PG_EPOCH_UNIX_DAYS, USECS_PER_DAY};

use crate::error::{Result, SqlError};
use crate::execution::datetime_functions as datetime;
use crate::execution::executor::ExecCtx;
use crate::execution::expr::Expr;
use crate::execution::numeric_math;
use crate::execution::sequences;
use crate::types::ops::{as_decimal, as_f64, as_i64, text_of};

pub(crate) type Body = fn(&[Value], &mut ExecCtx) -> Result<Value>;
pub(crate) type ReturnType = fn(&[Option<DataType>]) -> Option<DataType>;

/// A scalar function.
pub struct Function {
    pub name: &'static str,
    pub min_args: usize,
    pub max_args: usize,
    /// NULL in, NULL out, without calling `eval`.
    pub strict: bool,
    pub volatile: bool,
    pub returns: ReturnType,
    pub eval: Body,
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Looks a function up by name (lower case, schema removed) and argument count.
pub fn lookup(name: &str, args: usize) -> Result<&'static Function> {
    let candidates: Vec<&Function> = FUNCTIONS
        .iter()
        .chain(crate::execution::json::FUNCTIONS)
        .chain(crate::execution::formatting::FUNCTIONS)
        .chain(crate::execution::float_math::FUNCTIONS)
        .filter(|f| f.name == name)
        .collect();
    if candidates.is_empty() {
        return Err(SqlError::undefined_function(format!(
            "function {name} does not exist"
        )));
    }
    candidates
        .into_iter()
        .find(|f| (f.min_args..=f.max_args).contains(&args))
        .ok_or_else(|| {
            SqlError::undefined_function(format!(
                "function {name} with {args} arguments does not exist"
            ))
        })
}

/// Calls a function, applying strictness.
pub fn call(function: &Function, args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    if function.strict && args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    (function.eval)(args, ctx)
}

/// Strict (NULL in, NULL out) and foldable.
pub(crate) const fn strict(
    name: &'static str,
    args: (usize, usize),
    returns: ReturnType,
    eval: Body,
) -> Function {
    Function {
        name,
        min_args: args.0,
        max_args: args.1,
        strict: true,
        volatile: false,
        returns,
        eval,
    }
}

const fn volatile(name: &'static str, returns: ReturnType, eval: Body) -> Function {
    Function {
        name,
        min_args: 0,
        max_args: 0,
        strict: false,
        volatile: true,
        returns,
        eval,
    }
}

/// A function that reads the session or database: never folded at bind time.
pub(crate) const fn contextual(
    name: &'static str,
    args: (usize, usize),
    returns: ReturnType,
    eval: Body,
) -> Function {
    Function {
        volatile: true,
        ..strict(name, args, returns, eval)
    }
}

/// Called with NULL arguments too (it decides what NULL gives); foldable.
pub(crate) const fn lenient(
    name: &'static str,
    args: (usize, usize),
    returns: ReturnType,
    eval: Body,
) -> Function {
    Function {
        strict: false,
        ..strict(name, args, returns, eval)
    }
}

fn same_as_first(args: &[Option<DataType>]) -> Option<DataType> {
    args.first().copied().flatten()
}
fn first_known(args: &[Option<DataType>]) -> Option<DataType> {
    args.iter().flatten().next().copied()
}
pub(crate) fn text(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::Text)
}
/// `bytea` for a function of a `bytea` (substring of bytes), else `text`.
fn text_or_bytea(args: &[Option<DataType>]) -> Option<DataType> {
    match args.first() {
        Some(Some(DataType::Bytea)) => Some(DataType::Bytea),
        _ => Some(DataType::Text),
    }
}
pub(crate) fn integer(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::Integer)
}
pub(crate) fn bigint(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::BigInt)
}
pub(crate) fn double(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::Double)
}
pub(crate) fn boolean(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::Boolean)
}
pub(crate) fn numeric(_: &[Option<DataType>]) -> Option<DataType> {
    Some(NUMERIC)
}
fn bytea(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::Bytea)
}

fn uuid(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::Uuid)
}

fn interval(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::Interval)
}
/// The second argument's type (date_bin: `timestamp` or `timestamptz`, as its source).
fn same_as_second(args: &[Option<DataType>]) -> Option<DataType> {
    args.get(1).copied().flatten().or(Some(DataType::Timestamp))
}
fn timestamp(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::Timestamp)
}
pub(crate) fn timestamptz(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::TimestampTz)
}
fn time(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::Time)
}
/// `timestamptz` for a `timestamptz` second argument (date_trunc), else `timestamp`.
/// `date_trunc`'s type: an interval's, a timestamp's, else (a timestamptz, or a date, which
/// PostgreSQL casts to one) `timestamptz`.
fn timestamp_like_second(args: &[Option<DataType>]) -> Option<DataType> {
    match args.get(1) {
        Some(Some(DataType::Interval)) => Some(DataType::Interval),
        Some(Some(DataType::Timestamp)) => Some(DataType::Timestamp),
        _ => Some(DataType::TimestampTz),
    }
}
/// `timezone(zone, value)`'s type: a `timestamptz` gives a `timestamp` and the other way round.
fn timezone_shifted(args: &[Option<DataType>]) -> Option<DataType> {
    match args.get(1) {
        Some(Some(DataType::Timestamp)) => Some(DataType::TimestampTz),
        _ => Some(DataType::Timestamp),
    }
}
pub(crate) fn date(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::Date)
}
/// Numeric for numeric input, double for anything else (power, sqrt, exp, ln: PostgreSQL picks
/// the float8 version for integers).
fn numeric_only_for_numeric(args: &[Option<DataType>]) -> Option<DataType> {
    match args
        .iter()
        .flatten()
        .any(|t| matches!(t, DataType::Real | DataType::Double))
    {
        true => Some(DataType::Double),
        false
            if args
                .iter()
                .flatten()
                .any(|t| matches!(t, DataType::Numeric { .. })) =>
        {
            Some(NUMERIC)
        }
        false => Some(DataType::Double),
    }
}

/// Numeric for exact inputs, double for floats (round, trunc, floor...).
fn numeric_or_double(args: &[Option<DataType>]) -> Option<DataType> {
    match args.first().copied().flatten() {
        Some(DataType::Real | DataType::Double) => Some(DataType::Double),
        _ => Some(NUMERIC),
    }
}

const NUMERIC: DataType = DataType::Numeric {
    precision: None,
    scale: None,
};

static FUNCTIONS: &[Function] = &[
    strict("abs", (1, 1), same_as_first, abs),
    strict("round", (1, 2), numeric_or_double, round),
    strict("trunc", (1, 2), numeric_or_double, trunc),
    strict("floor", (1, 1), numeric_or_double, floor),
    strict("ceil", (1, 1), numeric_or_double, ceil),
    strict("ceiling", (1, 1), numeric_or_double, ceil),
    strict("sign", (1, 1), numeric_or_double, sign),
    strict("mod", (2, 2), same_as_first, modulo),
    strict("power", (2, 2), numeric_only_for_numeric, power),
    strict("pow", (2, 2), numeric_only_for_numeric, power),
    strict("sqrt", (1, 1), numeric_only_for_numeric, sqrt),
    strict("exp", (1, 1), numeric_only_for_numeric, exp),
    strict("ln", (1, 1), numeric_only_for_numeric, ln),
    strict("log", (1, 2), log_type, log),
    strict("log10", (1, 1), numeric_only_for_numeric, log),
    strict("div", (2, 2), numeric, div),
    strict("bit_length", (1, 1), integer, bit_length),
    strict("regexp_like", (2, 3), boolean, regexp_like),
    strict("regexp_count", (2, 4), integer, super::regex::regexp_count),
    strict("regexp_substr", (2, 6), text, super::regex::regexp_substr),
    strict(
        "similar_to_escape",
        (1, 2),
        text,
        super::regex::similar_to_escape,
    ),
    strict("lower", (1, 1), text, lower),
    strict("upper", (1, 1), text, upper),
    strict("initcap", (1, 1), text, initcap),
    strict("length", (1, 1), integer, char_length),
    strict("char_length", (1, 1), integer, char_length),
    strict("character_length", (1, 1), integer, char_length),
    strict("octet_length", (1, 1), integer, octet_length),
    strict("substr", (2, 3), text_or_bytea, substr),
    strict("substring", (2, 3), text_or_bytea, substr),
    strict("btrim", (1, 2), text, btrim),
    strict("ltrim", (1, 2), text, ltrim),
    strict("rtrim", (1, 2), text, rtrim),
    strict("replace", (3, 3), text, replace),
    strict("like_escape", (2, 2), text, like_escape),
    strict("split_part", (3, 3), text, split_part),
    strict("strpos", (2, 2), integer, strpos),
    strict("left", (2, 2), text, left),
    strict("right", (2, 2), text, right),
    strict("lpad", (2, 3), text, lpad),
    strict("rpad", (2, 3), text, rpad),
    strict("repeat", (2, 2), text, repeat),
    strict("md5", (1, 1), text, md5_hex),
    strict("encode", (2, 2), text, encode),
    strict("decode", (2, 2), bytea, decode),
    strict("convert_from", (2, 2), text, convert_from),
    strict("convert_to", (2, 2), bytea, convert_to),
    strict("translate", (3, 3), text, translate),
    strict("overlay", (3, 4), text, overlay),
    lenient("string_to_array", (2, 3), text, string_to_array),
    strict("quote_ident", (1, 1), text, quote_ident),
    strict("quote_literal", (1, 1), text, quote_literal),
    lenient("quote_nullable", (1, 1), text, quote_nullable),
    lenient("num_nulls", (1, 100), integer, num_nulls),
    lenient("num_nonnulls", (1, 100), integer, num_nonnulls),
    strict("make_date", (3, 3), date, make_date),
    strict(
        "make_timestamp",
        (6, 6),
        timestamp,
        datetime::make_timestamp,
    ),
    strict(
        "make_timestamptz",
        (6, 7),
        timestamptz,
        datetime::make_timestamptz,
    ),
    strict("make_interval", (0, 7), interval, datetime::make_interval),
    contextual("age", (1, 2), interval, datetime::age),
    strict("justify_hours", (1, 1), interval, datetime::justify_hours),
    strict("justify_days", (1, 1), interval, datetime::justify_days),
    strict(
        "justify_interval",
        (1, 1),
        interval,
        datetime::justify_interval,
    ),
    strict("date_bin", (3, 3), same_as_second, datetime::date_bin),
    strict("width_bucket", (4, 4), integer, width_bucket),
    strict("factorial", (1, 1), numeric, factorial),
    strict("sha224", (1, 1), bytea, |args, _| {
        sha2_digest::<sha2::Sha224>("sha224", args)
    }),
    strict("sha256", (1, 1), bytea, |args, _| {
        sha2_digest::<sha2::Sha256>("sha256", args)
    }),
    strict("sha384", (1, 1), bytea, |args, _| {
        sha2_digest::<sha2::Sha384>("sha384", args)
    }),
    strict("sha512", (1, 1), bytea, |args, _| {
        sha2_digest::<sha2::Sha512>("sha512", args)
    }),
    strict("gcd", (2, 2), same_as_first, gcd),
    strict("lcm", (2, 2), same_as_first, lcm),
    strict("cbrt", (1, 1), double, cbrt),
    strict("reverse", (1, 1), text, reverse),
    lenient("concat", (1, 100), text, concat),
    lenient("concat_ws", (2, 100), text, concat_ws),
    lenient("greatest", (1, 100), first_known, greatest),
    lenient("least", (1, 100), first_known, least),
    lenient("nullif", (2, 2), same_as_first, nullif),
    strict("date_part", (2, 2), double, date_part),
    // `date(x)`, the function form of `x::date`.
    strict("date", (1, 1), date, |args, _| {
        Ok(args[0].cast_to(&DataType::Date)?)
    }),
    strict("extract", (2, 2), numeric, extract),
    strict("date_trunc", (2, 2), timestamp_like_second, date_trunc),
    strict("timezone", (2, 2), timezone_shifted, timezone),
    volatile("now", timestamptz, now),
    volatile("current_timestamp", timestamptz, now),
    volatile("localtimestamp", timestamp, local_now),
    volatile("statement_timestamp", timestamptz, statement_timestamp),
    volatile("transaction_timestamp", timestamptz, now),
    volatile("clock_timestamp", timestamptz, clock_timestamp),
    volatile("current_date", date, current_date),
    volatile("localtime", time, local_time),
    strict("make_time", (3, 3), time, make_time),
    volatile("random", double, random),
    contextual("setseed", (1, 1), text, setseed),
    volatile("gen_random_uuid", uuid, gen_random_uuid),
    contextual("version", (0, 0), text, version),
    contextual("current_database", (0, 0), text, current_database),
    contextual("current_schema", (0, 0), text, current_schema),
    contextual("current_user", (0, 0), text, current_user),
    contextual("session_user", (0, 0), text, session_user),
    contextual("user", (0, 0), text, current_user),
    contextual("pg_backend_pid", (0, 0), integer, backend_pid),
    contextual("txid_current", (0, 0), bigint, txid_current),
    contextual("pg_sleep", (1, 1), text, pg_sleep),
    contextual("current_setting", (1, 2), text, current_setting),
    contextual("nextval", (1, 1), bigint, sequences::nextval),
    contextual("setval", (2, 3), bigint, sequences::setval),
    contextual("currval", (1, 1), bigint, sequences::currval),
    contextual("lastval", (0, 0), bigint, sequences::lastval),
    contextual(
        "pg_get_serial_sequence",
        (2, 2),
        text,
        sequences::serial_sequence,
    ),
    strict("to_hex", (1, 1), text, to_hex),
    strict("chr", (1, 1), text, chr),
    strict("ascii", (1, 1), integer, ascii),
    strict("starts_with", (2, 2), boolean, starts_with),
];

fn type_name(value: &Value) -> String {
    crate::types::type_name(value.data_type())
}

fn no_such(name: &str, value: &Value) -> SqlError {
    SqlError::undefined_function(format!(
        "function {name}({}) does not exist",
        type_name(value)
    ))
}

fn abs(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let out_of_range = |ty: &str| SqlError::new("22003", format!("{ty} out of range"));
    Ok(match &args[0] {
        Value::SmallInt(v) => {
            Value::SmallInt(v.checked_abs().ok_or_else(|| out_of_range("smallint"))?)
        }
        Value::Integer(v) => {
            Value::Integer(v.checked_abs().ok_or_else(|| out_of_range("integer"))?)
        }
        Value::BigInt(v) => Value::BigInt(v.checked_abs().ok_or_else(|| out_of_range("bigint"))?),
        Value::Real(v) => Value::Real(v.abs()),
        Value::Double(v) => Value::Double(v.abs()),
        Value::Numeric(d) => Value::Numeric(d.abs()),
        other => return Err(no_such("abs", other)),
    })
}

fn is_float(value: &Value) -> bool {
    matches!(value, Value::Real(_) | Value::Double(_))
}

fn digits_arg(args: &[Value]) -> i64 {
    args.get(1).map_or(0, as_i64)
}

fn round(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if is_float(&args[0]) && args.len() == 1 {
        return Ok(Value::Double(as_f64(&args[0]).round_ties_even()));
    }
    decimal_to_places(args, RoundingStrategy::MidpointAwayFromZero)
}

fn trunc(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if is_float(&args[0]) && args.len() == 1 {
        return Ok(Value::Double(as_f64(&args[0]).trunc()));
    }
    decimal_to_places(args, RoundingStrategy::ToZero)
}

/// Rounds a numeric to `args[1]` places (negative: to tens, hundreds...), keeping that scale.
fn decimal_to_places(args: &[Value], strategy: RoundingStrategy) -> Result<Value> {
    let d = as_decimal(&args[0])?;
    let places = digits_arg(args);
    if places >= 0 {
        let places = places.min(28) as u32;
        let rounded = d.round_dp_with_strategy(places, strategy);
        return Ok(Value::Numeric(crate::types::ops::with_scale(
            rounded, places,
        )));
    }
    let factor = Decimal::from(10i64.pow((-places).min(18) as u32));
    let rounded = (d / factor).round_dp_with_strategy(0, strategy) * factor;
    Ok(Value::Numeric(rounded.round_dp(0)))
}

fn floor(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(match &args[0] {
        v if is_float(v) => Value::Double(as_f64(v).floor()),
        v => Value::Numeric(as_decimal(v)?.floor()),
    })
}

fn ceil(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(match &args[0] {
        v if is_float(v) => Value::Double(as_f64(v).ceil()),
        v => Value::Numeric(as_decimal(v)?.ceil()),
    })
}

fn sign(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(match &args[0] {
        v if is_float(v) => Value::Double(if as_f64(v) == 0.0 {
            0.0
        } else {
            as_f64(v).signum()
        }),
        v => {
            let d = as_decimal(v)?;
            let sign = if d.is_zero() {
                0
            } else if d.is_sign_negative() {
                -1
            } else {
                1
            };
            Value::Numeric(Decimal::from(sign))
        }
    })
}

fn modulo(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    crate::types::ops::arith(crate::types::ops::ArithOp::Mod, &args[0], &args[1])
}

fn float_result(x: f64) -> Result<f64> {
    if x.is_nan() {
        return Err(SqlError::new(
            "2201F",
            "invalid argument for power function",
        ));
    }
    if x.is_infinite() {
        return Err(SqlError::new("22003", "value out of range: overflow"));
    }
    Ok(x)
}

/// Evaluates a float function of a double (numeric arguments take `numeric_math`).
fn float_fn(args: &[Value], f: impl Fn(f64) -> f64) -> Result<Value> {
    Ok(Value::Double(float_result(f(as_f64(&args[0])))?))
}

fn power(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (base, exponent) = (as_f64(&args[0]), as_f64(&args[1]));
    if base == 0.0 && exponent < 0.0 {
        return Err(SqlError::new(
            "2201F",
            "zero raised to a negative power is undefined",
        ));
    }
    if base < 0.0 && exponent.fract() != 0.0 {
        return Err(SqlError::new(
            "2201F",
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    let numeric = matches!(args[0], Value::Numeric(_)) || matches!(args[1], Value::Numeric(_));
    if numeric && exponent.fract() == 0.0 && exponent >= 0.0 {
        let base = as_decimal(&args[0])?;
        let mut d = Decimal::ONE;
        for _ in 0..exponent as u64 {
            d = d
                .checked_mul(base)
                .ok_or_else(|| SqlError::new("22003", "value overflows numeric format"))?;
        }
        return Ok(Value::Numeric(crate::types::ops::with_scale(
            d.normalize(),
            16,
        )));
    }
    let result = float_result(base.powf(exponent))?;
    if numeric {
        let d = Decimal::try_from(result)
            .map_err(|_| SqlError::new("22003", "value out of range for type numeric"))?;
        return Ok(Value::Numeric(crate::types::ops::with_scale(
            d.round_dp(16),
            16,
        )));
    }
    Ok(Value::Double(result))
}

fn sqrt(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if let Value::Numeric(x) = &args[0] {
        return numeric_math::sqrt(*x).map(Value::Numeric);
    }
    if as_f64(&args[0]) < 0.0 {
        return Err(SqlError::new(
            "2201F",
            "cannot take square root of a negative number",
        ));
    }
    float_fn(args, f64::sqrt)
}

fn exp(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if let Value::Numeric(x) = &args[0] {
        return numeric_math::exp(*x).map(Value::Numeric);
    }
    float_fn(args, f64::exp)
}

fn ln(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if let Value::Numeric(x) = &args[0] {
        return numeric_math::ln(*x).map(Value::Numeric);
    }
    logarithm_argument(&args[0])?;
    float_fn(args, f64::ln)
}

/// `log(x)` and `log10(x)`: the base-10 logarithm; `log(b, x)`: the base-`b` one, a numeric
/// (PostgreSQL has it for numerics only).
fn log(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    match args {
        [Value::Numeric(x)] => numeric_math::log(Decimal::TEN, *x).map(Value::Numeric),
        [x] => {
            logarithm_argument(x)?;
            float_fn(args, f64::log10)
        }
        [base, x] => numeric_math::log(as_decimal(base)?, as_decimal(x)?).map(Value::Numeric),
        _ => unreachable!("log takes one or two arguments"),
    }
}

/// `log(x)`'s type: numeric for a numeric argument, double otherwise; `log(b, x)`: numeric.
fn log_type(args: &[Option<DataType>]) -> Option<DataType> {
    match args.len() {
        2 => Some(NUMERIC),
        _ => numeric_only_for_numeric(args),
    }
}

/// 2201E for the argument of a logarithm that is zero or negative, as PostgreSQL says it.
fn logarithm_argument(x: &Value) -> Result<()> {
    match as_f64(x) {
        0.0 => Err(SqlError::new("2201E", "cannot take logarithm of zero")),
        x if x < 0.0 => Err(SqlError::new(
            "2201E",
            "cannot take logarithm of a negative number",
        )),
        _ => Ok(()),
    }
}

/// `div(y, x)`: the integer quotient of `y / x`, truncated towards zero, as a numeric.
fn div(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (y, x) = (as_decimal(&args[0])?, as_decimal(&args[1])?);
    if x.is_zero() {
        return Err(SqlError::new("22012", "division by zero"));
    }
    let quotient = y
        .checked_div(x)
        .ok_or_else(|| SqlError::new("22003", "value out of range for type numeric"))?;
    Ok(Value::Numeric(quotient.trunc()))
}

/// `bit_length(s)`: the bits of the string's bytes (or of a bytea's).
fn bit_length(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    match octet_length(args, ctx)? {
        Value::Integer(bytes) => Ok(Value::Integer(bytes * 8)),
        other => Ok(other),
    }
}

/// `regexp_like(string, pattern [, flags])`: whether the pattern matches somewhere in the string
/// (`i` ignores case; `g` is refused, as PostgreSQL does).
fn regexp_like(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (global, case_insensitive) = super::regex::regex_flags(args.get(2))?;
    if global {
        return Err(SqlError::new(
            "22023",
            "regexp_like() does not support the \"global\" option",
        ));
    }
    let subject = string(&args[0]);
    super::regex::with_regex(string(&args[1]), case_insensitive, |regex| {
        Value::Boolean(regex.is_match(&subject))
    })
}

fn string(value: &Value) -> String {
    match value {
        Value::Text(s) => s.clone(),
        other => text_of(other),
    }
}

fn lower(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(
        string(&args[0]).chars().map(lower_char).collect(),
    ))
}

fn upper(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(
        string(&args[0]).chars().map(upper_char).collect(),
    ))
}

/// A character's upper case as PostgreSQL maps it, one character for one (`ß` stays `ß`; a
/// mapping to several characters, as Unicode's full `ß` → `SS`, is not taken).
fn upper_char(c: char) -> char {
    single(c.to_uppercase()).unwrap_or(c)
}

/// A character's lower case, one character for one (see [`upper_char`]); `İ`, whose full
/// lower case is `i` and a combining dot, is `i`, as the C library maps it.
fn lower_char(c: char) -> char {
    match c {
        '\u{130}' => 'i',
        c => single(c.to_lowercase()).unwrap_or(c),
    }
}

fn single(mut mapped: impl Iterator<Item = char>) -> Option<char> {
    match (mapped.next(), mapped.next()) {
        (Some(c), None) => Some(c),
        _ => None,
    }
}

fn initcap(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let mut out = String::new();
    let mut start = true;
    for c in string(&args[0]).chars() {
        if c.is_alphanumeric() {
            out.push(if start { upper_char(c) } else { lower_char(c) });
            start = false;
        } else {
            out.push(c);
            start = true;
        }
    }
    Ok(Value::Text(out))
}

/// Character length; `char(n)` values do not count their trailing spaces, as in PostgreSQL.
fn char_length(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let n = match &args[0] {
        Value::Bytea(b) => b.len(),
        v => string(v).chars().count(),
    };
    Ok(Value::Integer(n as i32))
}

fn octet_length(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let n = match &args[0] {
        Value::Bytea(b) => b.len(),
        v => string(v).len(),
    };
    Ok(Value::Integer(n as i32))
}

/// `substr(s, from [, count])` with 1-based `from` that may lie before the string.
fn substr(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let start = as_i64(&args[1]);
    let end = match args.get(2) {
        Some(count) => {
            let count = as_i64(count);
            if count < 0 {
                return Err(SqlError::new(
                    "22011",
                    "negative substring length not allowed",
                ));
            }
            start.saturating_add(count)
        }
        None => i64::MAX,
    };
    // The 1-based positions [start, end) as a range of `len` items.
    let picked = |len: usize| {
        let from = (start.max(1) - 1) as usize;
        let to = (end.max(1) - 1).min(len as i64) as usize;
        from.min(to)..to
    };
    Ok(match &args[0] {
        Value::Bytea(bytes) => Value::Bytea(bytes[picked(bytes.len())].to_vec()),
        text => {
            let chars: Vec<char> = string(text).chars().collect();
            Value::Text(chars[picked(chars.len())].iter().collect())
        }
    })
}

fn trim_set(args: &[Value]) -> Vec<char> {
    args.get(1)
        .map_or(vec![' '], |s| string(s).chars().collect())
}

/// Which ends `btrim`, `ltrim` and `rtrim` cut.
enum Side {
    Both,
    Start,
    End,
}

/// Cuts the characters of the trim set (a space by default) from the chosen ends.
fn trim(args: &[Value], side: Side) -> Result<Value> {
    let set = trim_set(args);
    let text = string(&args[0]);
    let cut = |c: char| set.contains(&c);
    let kept = match side {
        Side::Both => text.trim_matches(cut),
        Side::Start => text.trim_start_matches(cut),
        Side::End => text.trim_end_matches(cut),
    };
    Ok(Value::Text(kept.to_owned()))
}

fn btrim(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    trim(args, Side::Both)
}

fn ltrim(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    trim(args, Side::Start)
}

fn rtrim(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    trim(args, Side::End)
}

/// `like_escape(pattern, escape)`: `pattern` with `escape` as its escape character, rewritten to
/// use the default one (`\`); an empty escape turns escaping off.
fn like_escape(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let pattern = string(&args[0]);
    let escape = string(&args[1]);
    let mut chars = escape.chars();
    let escape = match (chars.next(), chars.next()) {
        (None, _) => None,
        (Some(c), None) => Some(c),
        _ => {
            return Err(SqlError::new("22025", "invalid escape string")
                .with_hint("Escape string must be empty or one character."))
        }
    };
    let mut rewritten = String::with_capacity(pattern.len());
    let mut pattern = pattern.chars();
    while let Some(c) = pattern.next() {
        if Some(c) == escape {
            // A trailing escape stays a trailing `\`, as in PostgreSQL.
            rewritten.push('\\');
            rewritten.extend(pattern.next());
        } else if c == '\\' {
            rewritten.push_str("\\\\");
        } else {
            rewritten.push(c);
        }
    }
    Ok(Value::Text(rewritten))
}

/// `split_part(text, delimiter, n)`: the n-th field (from the end when negative), or ''.
fn split_part(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let text = string(&args[0]);
    let delimiter = string(&args[1]);
    let n = crate::types::ops::as_i64(&args[2]);
    if n == 0 {
        return Err(SqlError::new("22023", "field position must not be zero"));
    }
    let fields: Vec<&str> = if delimiter.is_empty() {
        vec![text.as_str()]
    } else {
        text.split(delimiter.as_str()).collect()
    };
    let at = if n > 0 {
        usize::try_from(n - 1).ok()
    } else {
        usize::try_from(-n)
            .ok()
            .and_then(|back| fields.len().checked_sub(back))
    };
    Ok(Value::Text(
        at.and_then(|i| fields.get(i))
            .copied()
            .unwrap_or("")
            .to_owned(),
    ))
}

fn replace(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let from = string(&args[1]);
    let s = string(&args[0]);
    if from.is_empty() {
        return Ok(Value::Text(s));
    }
    Ok(Value::Text(s.replace(&from, &string(&args[2]))))
}

fn strpos(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (s, needle) = (string(&args[0]), string(&args[1]));
    let position = s
        .find(&needle)
        .map_or(0, |byte| s[..byte].chars().count() + 1);
    Ok(Value::Integer(position as i32))
}

fn left(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (chars, keep) = kept_chars(args);
    Ok(Value::Text(chars[..keep].iter().collect()))
}

fn right(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (chars, keep) = kept_chars(args);
    Ok(Value::Text(chars[chars.len() - keep..].iter().collect()))
}

/// `left`/`right`'s string as characters and how many of them to keep: n, or all but |n| when n
/// is negative.
fn kept_chars(args: &[Value]) -> (Vec<char>, usize) {
    let chars: Vec<char> = string(&args[0]).chars().collect();
    let n = as_i64(&args[1]);
    let keep = if n >= 0 {
        (n as usize).min(chars.len())
    } else {
        chars.len().saturating_sub(n.unsigned_abs() as usize)
    };
    (chars, keep)
}

fn pad(args: &[Value], on_left: bool) -> Value {
    let chars: Vec<char> = string(&args[0]).chars().collect();
    let width = as_i64(&args[1]).max(0) as usize;
    let fill: Vec<char> = args
        .get(2)
        .map_or(vec![' '], |f| string(f).chars().collect());
    if chars.len() >= width || fill.is_empty() {
        return Value::Text(chars[..width.min(chars.len())].iter().collect());
    }
    let padding: String = fill.iter().cycle().take(width - chars.len()).collect();
    let body: String = chars.iter().collect();
    Value::Text(if on_left {
        padding + &body
    } else {
        body + &padding
    })
}

fn lpad(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(pad(args, true))
}

fn rpad(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(pad(args, false))
}

fn repeat(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let n = as_i64(&args[1]).max(0) as usize;
    let s = string(&args[0]);
    if s.len().saturating_mul(n) > 1 << 28 {
        return Err(SqlError::new("54000", "requested length too large"));
    }
    Ok(Value::Text(s.repeat(n)))
}

fn reverse(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(string(&args[0]).chars().rev().collect()))
}

fn concat(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(
        args.iter().filter(|v| !v.is_null()).map(string).collect(),
    ))
}

fn concat_ws(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if args[0].is_null() {
        return Ok(Value::Null);
    }
    let parts: Vec<String> = args[1..]
        .iter()
        .filter(|v| !v.is_null())
        .map(string)
        .collect();
    Ok(Value::Text(parts.join(&string(&args[0]))))
}

fn extreme(args: &[Value], want: std::cmp::Ordering) -> Value {
    let mut best = Value::Null;
    for value in args.iter().filter(|v| !v.is_null()) {
        if best.is_null() || value.compare(&best) == Some(want) {
            best = value.clone();
        }
    }
    best
}

fn greatest(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(extreme(args, std::cmp::Ordering::Greater))
}

fn least(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(extreme(args, std::cmp::Ordering::Less))
}

fn nullif(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if args[0].compare(&args[1]) == Some(std::cmp::Ordering::Equal) {
        Ok(Value::Null)
    } else {
        Ok(args[0].clone())
    }
}

/// The calendar fields of a date or timestamp: (year, month, day, micros into the day).
/// Year, month, day and microseconds of the day of a date or timestamp (a `timestamptz` in
/// the session zone).
pub(crate) fn fields(value: &Value) -> Result<(i64, i64, i64, i64)> {
    let (days, micros) = match value {
        Value::Date(d) => (i64::from(*d), 0),
        Value::Timestamp(t) => (t.div_euclid(USECS_PER_DAY), t.rem_euclid(USECS_PER_DAY)),
        Value::TimestampTz(t) => {
            let local = steady_types::zone::session_zone().to_local(*t);
            (
                local.div_euclid(USECS_PER_DAY),
                local.rem_euclid(USECS_PER_DAY),
            )
        }
        other => return Err(no_such("date_part", other)),
    };
    let (y, m, d) = civil_from_days(days + PG_EPOCH_UNIX_DAYS);
    Ok((y, m, d, micros))
}

/// `extract` / `date_part` of an interval, as PostgreSQL's `interval_part`: years and months
/// from the months, a year as 365.25 days and a month as 30 for the epoch.
fn interval_field(field: &str, interval: &steady_types::Interval) -> Result<Decimal> {
    let micros = interval.micros;
    Ok(match field {
        "year" | "years" => Decimal::from(interval.months / 12),
        "month" | "months" => Decimal::from(interval.months % 12),
        "day" | "days" => Decimal::from(interval.days),
        "hour" | "hours" => Decimal::from(micros / 3_600_000_000),
        "minute" | "minutes" => Decimal::from(micros / 60_000_000 % 60),
        "second" | "seconds" => Decimal::new(micros % 60_000_000, 6),
        "epoch" => {
            let years = Decimal::from(interval.months / 12) * Decimal::new(3_155_760_000, 2);
            let months = Decimal::from(i64::from(interval.months % 12) * 30 * 86_400);
            let days = Decimal::from(i64::from(interval.days) * 86_400);
            let seconds = years + months + days + Decimal::new(micros, 6);
            crate::types::ops::with_scale(seconds, 6)
        }
        other => {
            return Err(SqlError::new(
                "22023",
                format!("unit \"{other}\" not supported for type interval"),
            ))
        }
    })
}

/// `extract` / `date_part` of a time of day: its clock fields and seconds since midnight.
fn time_field(field: &str, micros: i64) -> Result<Decimal> {
    Ok(match field {
        "hour" | "hours" => Decimal::from(micros / 3_600_000_000),
        "minute" | "minutes" => Decimal::from(micros / 60_000_000 % 60),
        "second" | "seconds" => Decimal::new(micros % 60_000_000, 6),
        "millisecond" | "milliseconds" => Decimal::new(micros % 60_000_000, 3),
        "microsecond" | "microseconds" => Decimal::from(micros % 60_000_000),
        "epoch" => Decimal::new(micros, 6),
        other => {
            return Err(SqlError::new(
                "0A000",
                format!("unit \"{other}\" not supported for type time without time zone"),
            ))
        }
    })
}

fn field_value(field: &str, value: &Value) -> Result<Decimal> {
    match value {
        Value::Interval(interval) => return interval_field(&field.to_ascii_lowercase(), interval),
        Value::Time(micros) => return time_field(&field.to_ascii_lowercase(), *micros),
        _ => {}
    }
    let (year, month, day, micros) = fields(value)?;
    let time_field = matches!(
        field,
        "hour"
            | "hours"
            | "minute"
            | "minutes"
            | "second"
            | "seconds"
            | "millisecond"
            | "milliseconds"
            | "microsecond"
            | "microseconds"
    );
    if time_field && matches!(value, Value::Date(_)) {
        return Err(SqlError::new(
            "0A000",
            format!("unit \"{field}\" not supported for type date"),
        ));
    }
    let days = match value {
        Value::Date(d) => i64::from(*d),
        Value::Timestamp(t) => t.div_euclid(USECS_PER_DAY),
        Value::TimestampTz(t) => {
            if field.eq_ignore_ascii_case("epoch") {
                let seconds = Decimal::from(t.div_euclid(USECS_PER_DAY) + PG_EPOCH_UNIX_DAYS)
                    * Decimal::from(86_400);
                let micros = Decimal::new(t.rem_euclid(USECS_PER_DAY), 6);
                return Ok(crate::types::ops::with_scale(seconds + micros, 6));
            }
            steady_types::zone::session_zone()
                .to_local(*t)
                .div_euclid(USECS_PER_DAY)
        }
        _ => 0,
    };
    Ok(match field.to_ascii_lowercase().as_str() {
        "year" | "years" => Decimal::from(year),
        "month" | "months" => Decimal::from(month),
        "day" | "days" => Decimal::from(day),
        "hour" | "hours" => Decimal::from(micros / 3_600_000_000),
        "minute" | "minutes" => Decimal::from(micros / 60_000_000 % 60),
        "second" | "seconds" => Decimal::new(micros % 60_000_000, 6),
        "dow" => Decimal::from((days + 6).rem_euclid(7)),
        "week" => Decimal::from(iso_week(days)),
        "isodow" => Decimal::from((days + 5).rem_euclid(7) + 1),
        "doy" => {
            Decimal::from(days + PG_EPOCH_UNIX_DAYS - steady_types::days_from_civil(year, 1, 1) + 1)
        }
        "quarter" => Decimal::from((month - 1) / 3 + 1),
        "decade" => Decimal::from(year.div_euclid(10)),
        "century" => Decimal::from((year + 99).div_euclid(100)),
        "millennium" => Decimal::from((year + 999).div_euclid(1000)),
        "isoyear" => {
            let thursday = days - (days + 5).rem_euclid(7) + 3;
            Decimal::from(civil_from_days(thursday + PG_EPOCH_UNIX_DAYS).0)
        }
        "millisecond" | "milliseconds" => Decimal::new(micros % 60_000_000, 3),
        "microsecond" | "microseconds" => Decimal::from(micros % 60_000_000),
        // The Julian day: days since 4714-11-24 BC, 2000-01-01 being day 2451545; a timestamp's
        // time of day as the fraction.
        "julian" if matches!(value, Value::Date(_)) => Decimal::from(days + 2_451_545),
        "julian" => {
            let fraction = Decimal::from(micros) / Decimal::from(USECS_PER_DAY);
            crate::types::ops::with_scale(Decimal::from(days + 2_451_545) + fraction, 20)
        }
        "timezone" | "timezone_hour" | "timezone_minute"
            if matches!(value, Value::TimestampTz(_)) =>
        {
            let Value::TimestampTz(t) = value else {
                unreachable!("matched a timestamptz")
            };
            let offset = (steady_types::zone::session_zone().to_local(*t) - t) / 1_000_000;
            Decimal::from(match field.to_ascii_lowercase().as_str() {
                "timezone" => offset,
                "timezone_hour" => offset / 3600,
                _ => offset / 60 % 60,
            })
        }
        "epoch" if matches!(value, Value::Date(_)) => {
            Decimal::from(days + PG_EPOCH_UNIX_DAYS) * Decimal::from(86_400)
        }
        "epoch" => {
            let seconds = Decimal::from(days + PG_EPOCH_UNIX_DAYS) * Decimal::from(86_400);
            crate::types::ops::with_scale(seconds + Decimal::new(micros, 6), 6)
        }
        other => {
            return Err(SqlError::new(
                "22023",
                format!(
                    "unit \"{other}\" not recognized for type {}",
                    type_name(value)
                ),
            ))
        }
    })
}

/// The ISO 8601 week number of a day (days since 2000-01-01).
fn iso_week(days: i64) -> i64 {
    let weekday = (days + 5).rem_euclid(7);
    let thursday = days - weekday + 3;
    let (year, _, _) = civil_from_days(thursday + PG_EPOCH_UNIX_DAYS);
    let first = steady_types::days_from_civil(year, 1, 1) - PG_EPOCH_UNIX_DAYS;
    (thursday - first) / 7 + 1
}

fn date_part(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let d = field_value(&string(&args[0]).to_lowercase(), &args[1])?;
    Ok(Value::Double(d.to_f64().unwrap_or(f64::NAN)))
}

fn extract(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let field = string(&args[0]).to_lowercase();
    Ok(Value::Numeric(field_value(&field, &args[1])?))
}

/// `timezone(zone, value)`, which `value AT TIME ZONE zone` is: an instant as the local time in
/// `zone` (a `timestamp`), or a local time in `zone` as the instant it is (a `timestamptz`).
fn timezone(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let name = string(&args[0]);
    let zone = steady_types::zone::Zone::named(&name).ok_or_else(|| {
        SqlError::new("22023", format!("time zone \"{name}\" not recognized")).with_detail(
            "SteadyDB takes IANA time zone names (Europe/Berlin) and UTC, not offsets.",
        )
    })?;
    match &args[1] {
        Value::TimestampTz(instant) => Ok(Value::Timestamp(zone.to_local(*instant))),
        Value::Timestamp(local) => Ok(Value::TimestampTz(zone.to_utc(*local))),
        other => Err(SqlError::undefined_function(format!(
            "function timezone(text, {}) does not exist",
            type_name(other)
        ))),
    }
}

fn date_trunc(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let unit = string(&args[0]).to_ascii_lowercase();
    let value = match &args[1] {
        Value::Interval(interval) => return truncate_interval(&unit, interval),
        // A date is truncated as the timestamptz it casts to: its midnight in the session zone.
        Value::Date(d) => Value::TimestampTz(
            steady_types::zone::session_zone().to_utc(i64::from(*d) * USECS_PER_DAY),
        ),
        other => other.clone(),
    };
    let (year, month, day, micros) = fields(&value)?;
    let day_start = |y: i64, m: i64, d: i64| {
        (steady_types::days_from_civil(y, m, d) - PG_EPOCH_UNIX_DAYS) * USECS_PER_DAY
    };
    let within_day = |unit: i64| day_start(year, month, day) + micros / unit * unit;
    let truncated = match unit.as_str() {
        "millennium" => day_start((year - 1).div_euclid(1000) * 1000 + 1, 1, 1),
        "century" => day_start((year - 1).div_euclid(100) * 100 + 1, 1, 1),
        "decade" => day_start(year.div_euclid(10) * 10, 1, 1),
        "year" => day_start(year, 1, 1),
        "quarter" => day_start(year, (month - 1) / 3 * 3 + 1, 1),
        "month" => day_start(year, month, 1),
        "week" => {
            let days = steady_types::days_from_civil(year, month, day) - PG_EPOCH_UNIX_DAYS;
            // 2000-01-01 was a Saturday: Monday is 2 days later.
            (days - (days - 2).rem_euclid(7)) * USECS_PER_DAY
        }
        "day" => day_start(year, month, day),
        "hour" => within_day(3_600_000_000),
        "minute" => within_day(60_000_000),
        "second" => within_day(1_000_000),
        "milliseconds" => within_day(1_000),
        "microseconds" => within_day(1),
        other => {
            return Err(SqlError::new(
                "22023",
                format!("unit \"{other}\" not recognized for type timestamp"),
            ))
        }
    };
    Ok(match &value {
        Value::TimestampTz(_) => {
            Value::TimestampTz(steady_types::zone::session_zone().to_utc(truncated))
        }
        _ => Value::Timestamp(truncated),
    })
}

/// `date_trunc` of an interval: the fields below `unit` zeroed, as PostgreSQL's
/// `interval_trunc` (a year keeps whole years of the months, a day the months and days...).
fn truncate_interval(unit: &str, interval: &steady_types::Interval) -> Result<Value> {
    let steady_types::Interval {
        months,
        days,
        micros,
    } = *interval;
    let of_months = |size: i32| (months / size * size, 0, 0);
    let of_time = |size: i64| (months, days, micros / size * size);
    let (months, days, micros) = match unit {
        "millennium" => of_months(12_000),
        "century" => of_months(1_200),
        "decade" => of_months(120),
        "year" => of_months(12),
        "quarter" => of_months(3),
        "month" => of_months(1),
        "day" => (months, days, 0),
        "hour" => of_time(3_600_000_000),
        "minute" => of_time(60_000_000),
        "second" => of_time(1_000_000),
        "milliseconds" => of_time(1_000),
        "microseconds" => of_time(1),
        other => {
            let error = SqlError::new(
                "0A000",
                format!("unit \"{other}\" not supported for type interval"),
            );
            return Err(match other {
                "week" => error.with_detail("Months usually have fractional weeks."),
                _ => error,
            });
        }
    };
    Ok(Value::Interval(steady_types::Interval {
        months,
        days,
        micros,
    }))
}

/// `now()`, `current_timestamp`, `transaction_timestamp()`: when the transaction began.
fn now(_: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    Ok(Value::TimestampTz(ctx.transaction_time()))
}

/// `statement_timestamp()`: when the statement began.
fn statement_timestamp(_: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    Ok(Value::TimestampTz(ctx.statement_time()))
}

/// `clock_timestamp()`: the time of the call, which changes within a statement.
fn clock_timestamp(_: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::TimestampTz(crate::execution::executor::now_micros()))
}

/// `localtimestamp`: the transaction's start in the session zone, without the zone.
fn local_now(_: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Timestamp(
        steady_types::zone::session_zone().to_local(ctx.transaction_time()),
    ))
}

/// `localtime`: the transaction's start time of day in the session zone.
fn local_time(_: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let local = steady_types::zone::session_zone().to_local(ctx.transaction_time());
    Ok(Value::Time(local.rem_euclid(USECS_PER_DAY)))
}

fn current_date(_: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let local = steady_types::zone::session_zone().to_local(ctx.transaction_time());
    Ok(Value::Date(local.div_euclid(USECS_PER_DAY) as i32))
}

fn random(_: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Double(ctx.random().lock().next_unit()))
}

/// `enum_first(x)` of an enum type, called with the type's oid (the binder takes it from the
/// argument's type, whose value is not read): the type's first label as it is now.
pub static ENUM_FIRST: Function = strict("enum_first", (1, 1), same_as_first, |args, _| {
    enum_end(args, false)
});

/// `enum_last(x)`: as [`ENUM_FIRST`], the last label.
pub static ENUM_LAST: Function = strict("enum_last", (1, 1), same_as_first, |args, _| {
    enum_end(args, true)
});

/// The first or last value of the enum type whose oid is `args[0]`; 55000 for a type without
/// labels, as PostgreSQL says it.
fn enum_end(args: &[Value], last: bool) -> Result<Value> {
    let oid = as_i64(&args[0]) as u32;
    let labels = steady_types::enums::enum_type(oid).map_or(0, |t| t.labels.len());
    if labels == 0 {
        return Err(SqlError::new(
            "55000",
            format!(
                "enum {} contains no values",
                steady_types::enums::type_name(oid)
            ),
        ));
    }
    let position = if last { labels - 1 } else { 0 };
    Ok(Value::Enum {
        oid,
        position: position as u32,
    })
}

/// `setseed(x)`: seeds the session's `random()` (void: NULL here).
fn setseed(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    ctx.random().lock().set_seed(as_f64(&args[0]))?;
    Ok(Value::Null)
}

/// A version 4 uuid from the thread's random generator (PostgreSQL's uses its strong one too).
fn gen_random_uuid(_: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Uuid(steady_types::random_uuid(rand::random())))
}

fn version(_: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(format!(
        "PostgreSQL {} (SteadyDB {}) on x86_64-pc-linux-gnu, compiled by rustc, 64-bit",
        crate::execution::settings::SERVER_VERSION,
        env!("CARGO_PKG_VERSION")
    )))
}

fn current_database(_: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(ctx.database_name()))
}

fn current_schema(_: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text("public".to_owned()))
}

fn current_user(_: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(ctx.current_user()))
}

fn session_user(_: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(ctx.user_name()))
}

fn backend_pid(_: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Integer(ctx.session_id() as i32))
}

/// `txid_current()`: the transaction's id — the same for each statement of a transaction
/// block, larger for every later transaction, across restarts too.
fn txid_current(_: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let id = ctx.txn()?.id();
    i64::try_from(id)
        .map(Value::BigInt)
        .map_err(|_| SqlError::new("22003", "bigint out of range"))
}

/// `pg_sleep(seconds)`: waits, looking at the cancel flag and the statement deadline every
/// [`SLEEP_SLICE`]. PostgreSQL's result is `void`; here it is a NULL text.
fn pg_sleep(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let seconds = as_f64(&args[0]);
    if !seconds.is_finite() {
        return Err(SqlError::new(
            "22023",
            format!("invalid sleep duration: {seconds}"),
        ));
    }
    let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds.max(0.0));
    loop {
        ctx.check_cancel()?;
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Ok(Value::Null);
        }
        std::thread::sleep(left.min(SLEEP_SLICE));
    }
}

/// How long `pg_sleep` sleeps between two looks at the cancel flag.
const SLEEP_SLICE: std::time::Duration = std::time::Duration::from_millis(10);

fn current_setting(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(ctx.setting(&string(&args[0]))?))
}

fn to_hex(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(format!("{:x}", as_i64(&args[0]))))
}

fn chr(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let code = as_i64(&args[0]);
    let c = u32::try_from(code)
        .ok()
        .filter(|c| *c != 0)
        .and_then(char::from_u32)
        .ok_or_else(|| SqlError::new("54000", "requested character too large for encoding"))?;
    Ok(Value::Text(c.to_string()))
}

fn ascii(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Integer(
        string(&args[0]).chars().next().map_or(0, |c| c as i32),
    ))
}

fn starts_with(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Boolean(
        string(&args[0]).starts_with(&string(&args[1])),
    ))
}

fn md5_hex(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let bytes = match &args[0] {
        Value::Bytea(b) => md5::compute(b),
        other => md5::compute(string(other).as_bytes()),
    };
    Ok(Value::Text(format!("{bytes:x}")))
}

/// A function's binary-string argument: bytea, or text read as a bytea literal (an untyped
/// literal such as `'\x6869'` arrives as text).
fn bytea_argument(function: &str, value: &Value) -> Result<Vec<u8>> {
    let read = match value {
        Value::Text(text) => Value::parse(&DataType::Bytea, text)?,
        other => other.clone(),
    };
    match read {
        Value::Bytea(bytes) => Ok(bytes),
        _ => Err(no_such(function, value)),
    }
}

/// `encode(bytes, format)`: a binary string as text (see [`steady_types::bytea`]).
fn encode(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let bytes = bytea_argument("encode", &args[0])?;
    Ok(Value::Text(steady_types::bytea::encode(
        &bytes,
        &string(&args[1]),
    )?))
}

/// `decode(text, format)`: the binary string the text holds in the format.
fn decode(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let bytes = steady_types::bytea::decode(&string(&args[0]), &string(&args[1]))?;
    Ok(Value::Bytea(bytes))
}

/// The encodings `convert_from`/`convert_to` know, by PostgreSQL's name of them (case and
/// punctuation ignored: `utf-8` is UTF8).
#[derive(Clone, Copy, PartialEq)]
enum Encoding {
    Utf8,
    Latin1,
}

fn encoding(name: &Value) -> Result<Encoding> {
    let name = string(name);
    let folded: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect();
    match folded.as_str() {
        "UTF8" | "UNICODE" => Ok(Encoding::Utf8),
        "LATIN1" | "ISO88591" => Ok(Encoding::Latin1),
        _ => Err(SqlError::unsupported(format!(
            "conversion with encoding \"{name}\""
        ))),
    }
}

/// `convert_from(bytes, encoding)`: the text the bytes hold in the encoding (22021 for bytes that
/// are not valid in it).
fn convert_from(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let bytes = bytea_argument("convert_from", &args[0])?;
    Ok(Value::Text(match encoding(&args[1])? {
        Encoding::Utf8 => String::from_utf8(bytes.clone()).map_err(|err| {
            let at = err.utf8_error().valid_up_to();
            SqlError::new(
                "22021",
                format!(
                    "invalid byte sequence for encoding \"UTF8\": 0x{:02x}",
                    bytes[at]
                ),
            )
        })?,
        Encoding::Latin1 => bytes.iter().map(|&b| char::from(b)).collect(),
    }))
}

/// `convert_to(text, encoding)`: the text's bytes in the encoding (22P05 for a character the
/// encoding lacks).
fn convert_to(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let text = string(&args[0]);
    Ok(Value::Bytea(match encoding(&args[1])? {
        Encoding::Utf8 => text.into_bytes(),
        Encoding::Latin1 => text
            .chars()
            .map(|c| {
                u8::try_from(u32::from(c)).map_err(|_| {
                    SqlError::new(
                        "22P05",
                        format!(
                            "character with byte sequence 0x{} in encoding \"UTF8\" has no equivalent in encoding \"LATIN1\"",
                            c.to_string().bytes().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" 0x")
                        ),
                    )
                })
            })
            .collect::<Result<_>>()?,
    }))
}

/// `translate(s, from, to)`: each character of `from` in `s` replaced by the one at the same
/// place in `to`, or removed when `to` is shorter.
fn translate(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (from, to): (Vec<char>, Vec<char>) = (
        string(&args[1]).chars().collect(),
        string(&args[2]).chars().collect(),
    );
    let out = string(&args[0])
        .chars()
        .filter_map(|c| match from.iter().position(|&f| f == c) {
            Some(at) => to.get(at).copied(),
            None => Some(c),
        })
        .collect();
    Ok(Value::Text(out))
}

/// `string_to_array(s, delimiter [, null_string])`, as an array's text form; a NULL
/// delimiter splits into characters, an empty one gives `s` whole.
fn string_to_array(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if args[0].is_null() {
        return Ok(Value::Null);
    }
    let s = string(&args[0]);
    let null_string = args.get(2).filter(|v| !v.is_null()).map(string);
    let parts: Vec<String> = match &args[1] {
        Value::Null => s.chars().map(String::from).collect(),
        d if string(d).is_empty() => vec![s.clone()],
        d => s.split(string(d).as_str()).map(str::to_owned).collect(),
    };
    if s.is_empty() {
        return Ok(Value::Text("{}".to_owned()));
    }
    let values: Vec<Value> = parts
        .into_iter()
        .map(|p| match &null_string {
            Some(n) if *n == p => Value::Null,
            _ => Value::Text(p),
        })
        .collect();
    Ok(Value::Text(steady_types::array::array_text(&values)))
}

fn quote_ident(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(crate::types::quote_ident(&string(&args[0]))))
}

fn quote_literal(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(crate::execution::formatting::quote_literal(
        &string(&args[0]),
    )))
}

fn quote_nullable(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    match &args[0] {
        Value::Null => Ok(Value::Text("NULL".to_owned())),
        _ => quote_literal(args, ctx),
    }
}

fn num_nulls(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Integer(
        args.iter().filter(|v| v.is_null()).count() as i32
    ))
}

fn num_nonnulls(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Integer(
        args.iter().filter(|v| !v.is_null()).count() as i32
    ))
}

fn make_date(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (year, month, day) = (as_i64(&args[0]), as_i64(&args[1]), as_i64(&args[2]));
    datetime::date_from_fields(year, month, day).map(Value::Date)
}

/// `make_time(hour, min, sec)`.
fn make_time(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (hour, minute, second) = (as_i64(&args[0]), as_i64(&args[1]), as_f64(&args[2]));
    datetime::time_from_fields(hour, minute, second).map(Value::Time)
}

fn gcd_of(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// An integer result in the type of `like` (22003 when it does not fit).
fn integer_like(like: &Value, n: i128) -> Result<Value> {
    let out_of_range = || {
        SqlError::new(
            "22003",
            format!(
                "{} out of range",
                like.data_type().map_or("integer".into(), |t| t.to_string())
            ),
        )
    };
    Ok(match like {
        Value::SmallInt(_) => Value::SmallInt(i16::try_from(n).map_err(|_| out_of_range())?),
        Value::Integer(_) => Value::Integer(i32::try_from(n).map_err(|_| out_of_range())?),
        _ => Value::BigInt(i64::try_from(n).map_err(|_| out_of_range())?),
    })
}

fn gcd(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    refuse_numeric(args, "gcd")?;
    let (a, b) = (i128::from(as_i64(&args[0])), i128::from(as_i64(&args[1])));
    integer_like(&args[0], gcd_of(a, b))
}

fn lcm(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    refuse_numeric(args, "lcm")?;
    let (a, b) = (i128::from(as_i64(&args[0])), i128::from(as_i64(&args[1])));
    let g = gcd_of(a, b);
    integer_like(&args[0], if g == 0 { 0 } else { (a / g * b).abs() })
}

/// gcd and lcm take integers only (PostgreSQL's numeric forms are not here).
fn refuse_numeric(args: &[Value], name: &str) -> Result<()> {
    match args
        .iter()
        .any(|a| !matches!(a, Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_)))
    {
        true => Err(SqlError::unsupported(format!(
            "{name} of non-integer values"
        ))),
        false => Ok(()),
    }
}

fn cbrt(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Double(as_f64(&args[0]).cbrt()))
}

/// `sha224` ... `sha512` of a binary string (text read as a bytea literal), as bytea.
fn sha2_digest<D: sha2::Digest>(name: &str, args: &[Value]) -> Result<Value> {
    let bytes = bytea_argument(name, &args[0])?;
    Ok(Value::Bytea(D::digest(&bytes).to_vec()))
}

/// `factorial(n)` as numeric: 22003 for a negative `n` (PostgreSQL's code for it) and past
/// numeric's 28 digits.
fn factorial(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let n = as_i64(&args[0]);
    if n < 0 {
        return Err(SqlError::new(
            "22003",
            "factorial of a negative number is undefined",
        ));
    }
    let overflow = || SqlError::new("22003", "value overflows numeric format");
    let mut product = Decimal::ONE;
    for factor in 2..=n {
        product = product
            .checked_mul(Decimal::from(factor))
            .ok_or_else(overflow)?;
    }
    Ok(Value::Numeric(product))
}

/// `width_bucket(operand, low, high, count)`: which of `count` equal buckets between `low` and
/// `high` (either may be the larger) holds `operand`, 0 below and `count + 1` beyond them;
/// computed exactly for numeric arguments and in doubles otherwise, as PostgreSQL's two forms.
fn width_bucket(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let count = as_i64(&args[3]);
    if count <= 0 {
        return Err(SqlError::new("2201G", "count must be greater than zero"));
    }
    let exact = args[..3].iter().any(|a| matches!(a, Value::Numeric(_)));
    let bucket = if exact {
        let [operand, low, high] = [0, 1, 2].map(|i| as_decimal(&args[i]));
        let count = Decimal::from(count);
        bucket_of(operand?, low?, high?, |offset, span| {
            (offset * count / span).trunc().to_i64().unwrap_or(i64::MAX)
        })
    } else {
        let [operand, low, high] = [0, 1, 2].map(|i| as_f64(&args[i]));
        bucket_of(operand, low, high, |offset, span| {
            (count as f64 * (offset / span)).trunc() as i64
        })
    }
    .map(|below| below.map_or(count + 1, |b| b + 1))?;
    i32::try_from(bucket)
        .map(Value::Integer)
        .map_err(|_| SqlError::new("22003", "integer out of range"))
}

/// The 0-based bucket of `operand` between `low` and `high` as `index(offset, span)` computes
/// it from the distances to the first bound; 0 below the range is `Some(-1)`, beyond it `None`.
fn bucket_of<N>(operand: N, low: N, high: N, index: impl Fn(N, N) -> i64) -> Result<Option<i64>>
where
    N: Copy + PartialOrd + std::ops::Sub<Output = N>,
{
    use std::cmp::Ordering::{Greater, Less};
    Ok(match low.partial_cmp(&high) {
        Some(Less) if operand < low => Some(-1),
        Some(Less) if operand >= high => None,
        Some(Less) => Some(index(operand - low, high - low)),
        Some(Greater) if operand > low => Some(-1),
        Some(Greater) if operand <= high => None,
        Some(Greater) => Some(index(low - operand, low - high)),
        _ => {
            return Err(SqlError::new(
                "2201G",
                "lower bound cannot equal upper bound",
            ))
        }
    })
}

/// `overlay(string placing replacement from start [for count])`: `count` characters from
/// `start` (1-based) replaced, `count` defaulting to the replacement's length (a negative one
/// keeps characters twice, as PostgreSQL's); 22011 for a `start` below 1.
fn overlay(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (string, replacement) = (text_of(&args[0]), text_of(&args[1]));
    let start = as_i64(&args[2]);
    let count = match args.get(3) {
        Some(count) => as_i64(count),
        None => replacement.chars().count() as i64,
    };
    if start < 1 {
        return Err(SqlError::new(
            "22011",
            "negative substring length not allowed",
        ));
    }
    let chars: Vec<char> = string.chars().collect();
    let before = usize::try_from(start - 1)
        .unwrap_or(usize::MAX)
        .min(chars.len());
    let after = usize::try_from((start.saturating_add(count) - 1).max(0))
        .unwrap_or(usize::MAX)
        .min(chars.len());
    let mut out: String = chars[..before].iter().collect();
    out.push_str(&replacement);
    out.extend(&chars[after..]);
    Ok(Value::Text(out))
}

/// `function(expr, element type name)` for an array-typed `expr` of type `ty` (an array value is
/// its text, so a function that reads its elements is told their type); any other expression as
/// it is.
pub fn call_on_array(function: &'static Function, expr: Expr, ty: Option<DataType>) -> Expr {
    match ty.as_ref().and_then(DataType::element_type) {
        Some(element) => Expr::Call(
            function,
            vec![expr, Expr::Literal(Value::Text(element.to_string()))],
        ),
        None => expr,
    }
}

/// The element type an array call was told by name by [`call_on_array`]; text when the name is
/// not a type's.
pub fn array_element_type(name: &str) -> DataType {
    match name {
        "double precision" => DataType::Double,
        "numeric" => DataType::Numeric {
            precision: None,
            scale: None,
        },
        other => crate::types::builtin_type(other).unwrap_or(DataType::Text),
    }
}

/// A row value `(a, b, ...)` as a key: its fields' index-key encoding — equal for rows whose
/// fields are equal, NULL fields equal to each other as DISTINCT compares rows — and never NULL
/// itself (a row is not NULL even when its fields are). Bound for an aggregate's row argument,
/// so that `count(DISTINCT (a, b))` counts the distinct rows.
pub static ROW_KEY: Function = lenient("row_key", (1, usize::MAX), bytea, row_key);

fn row_key(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Bytea(steady_engine::codec::encode_key(args)))
}
