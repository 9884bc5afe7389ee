//! Trigonometric and angle functions of doubles (`sin` ... `atanh`, `atan2`, `pi`, `degrees`,
//! `radians`), the scale functions of numerics (`scale`, `min_scale`, `trim_scale`) and
//! `isfinite` of the date and time types, as PostgreSQL defines them.
//!
//! The trigonometric functions take their argument as a double (a numeric or an integer is
//! converted, as PostgreSQL's implicit cast does) and compute with the platform's libm, as
//! PostgreSQL's float.c does. An argument outside a function's domain (`acos(2)`, `sin` of
//! infinity) fails with 22003 "input is out of range", PostgreSQL's error, rather than giving NaN.

use rust_decimal::Decimal;
use steady_types::Value;

use crate::error::{Result, SqlError};
use crate::execution::executor::ExecCtx;
use crate::execution::functions::{boolean, double, integer, numeric, strict, Function};
use crate::types::ops::as_f64;

/// The functions of this module, found by name as the built-in ones.
pub static FUNCTIONS: &[Function] = &[
    strict("pi", (0, 0), double, |_, _| {
        Ok(Value::Double(std::f64::consts::PI))
    }),
    strict("degrees", (1, 1), double, |a, _| unary(a, f64::to_degrees)),
    strict("radians", (1, 1), double, |a, _| unary(a, f64::to_radians)),
    strict("sin", (1, 1), double, |a, _| unary(a, f64::sin)),
    strict("cos", (1, 1), double, |a, _| unary(a, f64::cos)),
    strict("tan", (1, 1), double, |a, _| unary(a, f64::tan)),
    strict("cot", (1, 1), double, |a, _| unary(a, |x| 1.0 / x.tan())),
    strict("asin", (1, 1), double, |a, _| unary(a, f64::asin)),
    strict("acos", (1, 1), double, |a, _| unary(a, f64::acos)),
    strict("atan", (1, 1), double, |a, _| unary(a, f64::atan)),
    strict("atan2", (2, 2), double, atan2),
    strict("sinh", (1, 1), double, |a, _| unary(a, f64::sinh)),
    strict("cosh", (1, 1), double, |a, _| unary(a, f64::cosh)),
    strict("tanh", (1, 1), double, |a, _| unary(a, f64::tanh)),
    strict("asinh", (1, 1), double, |a, _| unary(a, f64::asinh)),
    strict("acosh", (1, 1), double, |a, _| unary(a, f64::acosh)),
    strict("atanh", (1, 1), double, |a, _| unary(a, f64::atanh)),
    strict("scale", (1, 1), integer, scale),
    strict("min_scale", (1, 1), integer, min_scale),
    strict("trim_scale", (1, 1), numeric, trim_scale),
    strict("isfinite", (1, 1), boolean, isfinite),
];

/// `f(x)`; NaN from a number that is not NaN means `x` lies outside `f`'s domain.
fn unary(args: &[Value], f: impl Fn(f64) -> f64) -> Result<Value> {
    let x = as_f64(&args[0]);
    checked(x.is_nan(), f(x))
}

fn atan2(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (y, x) = (as_f64(&args[0]), as_f64(&args[1]));
    checked(y.is_nan() || x.is_nan(), y.atan2(x))
}

fn checked(nan_argument: bool, result: f64) -> Result<Value> {
    if result.is_nan() && !nan_argument {
        return Err(SqlError::new("22003", "input is out of range"));
    }
    Ok(Value::Double(result))
}

fn decimal(value: &Value) -> Result<Decimal> {
    match value {
        Value::Numeric(d) => Ok(*d),
        Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_) => {
            Ok(Decimal::from(crate::types::ops::as_i64(value)))
        }
        other => Err(SqlError::undefined_function(format!(
            "function of numeric called with {}",
            crate::types::type_name(other.data_type())
        ))),
    }
}

/// `scale(x)`: the digits after the decimal point `x` is written with.
fn scale(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Integer(decimal(&args[0])?.scale() as i32))
}

/// `min_scale(x)`: the fewest digits after the point that write `x` exactly.
fn min_scale(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Integer(decimal(&args[0])?.normalize().scale() as i32))
}

/// `trim_scale(x)`: `x` without the zeros that end its fraction.
fn trim_scale(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Numeric(decimal(&args[0])?.normalize()))
}

/// `isfinite(x)` of a date, a timestamp or an interval: false for ±infinity.
fn isfinite(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Boolean(match &args[0] {
        Value::Date(d) => *d != i32::MAX && *d != i32::MIN,
        Value::Timestamp(t) | Value::TimestampTz(t) => *t != i64::MAX && *t != i64::MIN,
        Value::Interval(_) => true,
        other => {
            return Err(SqlError::undefined_function(format!(
                "function isfinite({}) does not exist",
                crate::types::type_name(other.data_type())
            )))
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_domain_arguments_fail_and_nan_passes_through() {
        assert!(unary(&[Value::Double(2.0)], f64::acos).is_err());
        assert!(unary(&[Value::Double(f64::INFINITY)], f64::sin).is_err());
        let nan = unary(&[Value::Double(f64::NAN)], f64::sin).unwrap();
        assert!(matches!(nan, Value::Double(x) if x.is_nan()));
        assert_eq!(
            unary(&[Value::Integer(180)], f64::to_radians).unwrap(),
            Value::Double(std::f64::consts::PI)
        );
    }

    #[test]
    fn scales_of_a_numeric() {
        let call = |name: &str| {
            let function = crate::execution::functions::lookup(name, 1).unwrap();
            let x = Value::Numeric(Decimal::new(12300, 4));
            let expr = crate::execution::expr::Expr::Call(
                function,
                vec![crate::execution::expr::Expr::Literal(x)],
            );
            crate::execution::executor::eval_constant(&expr).unwrap()
        };
        assert_eq!(call("scale"), Value::Integer(4));
        assert_eq!(call("min_scale"), Value::Integer(2));
        assert_eq!(call("trim_scale"), Value::Numeric(Decimal::new(123, 2)));
    }
}
