//! `sqrt`, `exp`, `ln`, `log` and `log10` of numeric arguments, as PostgreSQL computes them.
//!
//! The value comes from rust_decimal's 28-digit arithmetic, not from a float; its scale is the one
//! PostgreSQL's numeric.c chooses for each function (`rscale`): enough decimals for at least 16
//! significant digits of the result, estimated from the argument's magnitude the way PostgreSQL
//! estimates it, never fewer than the argument shows, rounded half away from zero. So
//! `ln(2.0)` is 0.6931471805599453, `ln(1.05)` 0.048790164169432003 and `sqrt(200.0)`
//! 14.142135623730950, digit for digit as PostgreSQL prints them.
//!
//! Limits (rust_decimal's, issue 16): results beyond 28 significant digits or 28 decimals are
//! rounded to what a Decimal holds, and a result above 7.9e28 (`exp(67)`) fails with 22003.

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, MathematicalOps, RoundingStrategy};

use crate::error::{Result, SqlError};
use crate::types::ops::with_scale;

/// PostgreSQL's NUMERIC_MIN_SIG_DIGITS.
const MIN_SIG_DIGITS: i64 = 16;
/// The most decimals a Decimal holds (PostgreSQL allows 1,000).
const MAX_SCALE: i64 = 28;

/// `sqrt(x)`: 2201F for a negative `x`.
pub fn sqrt(x: Decimal) -> Result<Decimal> {
    if x.is_sign_negative() && !x.is_zero() {
        return Err(SqlError::new(
            "2201F",
            "cannot take square root of a negative number",
        ));
    }
    // numeric_sqrt: the result's weight in base-10000 digits is about half the argument's.
    let result_weight = 2 * (nbase_weight(x) + 1) - 1;
    let value = x.sqrt().ok_or_else(out_of_range)?;
    Ok(rounded(value, MIN_SIG_DIGITS - result_weight, &[x]))
}

/// `exp(x)`: 22003 when the result exceeds what a Decimal holds.
pub fn exp(x: Decimal) -> Result<Decimal> {
    // numeric_exp: log10(exp(x)) = x * log10(e), truncated.
    let decimal_weight =
        (x.to_f64().unwrap_or(0.0) * std::f64::consts::LOG10_E).clamp(-2000.0, 2000.0);
    let value = x.checked_exp().ok_or_else(out_of_range)?;
    Ok(rounded(value, MIN_SIG_DIGITS - decimal_weight as i64, &[x]))
}

/// `ln(x)`: 2201E for a zero or negative `x`.
pub fn ln(x: Decimal) -> Result<Decimal> {
    logarithm_argument(x)?;
    let value = x.checked_ln().ok_or_else(out_of_range)?;
    Ok(rounded(value, MIN_SIG_DIGITS - ln_weight(x), &[x]))
}

/// `log(base, x)` (and `log(x)`, `log10(x)`: base 10): 2201E for a zero or negative base or
/// argument, 22012 for base 1.
pub fn log(base: Decimal, x: Decimal) -> Result<Decimal> {
    logarithm_argument(base)?;
    logarithm_argument(x)?;
    let ln_base = base.checked_ln().ok_or_else(out_of_range)?;
    if ln_base.is_zero() {
        return Err(SqlError::new("22012", "division by zero"));
    }
    let value = x
        .checked_ln()
        .and_then(|ln_x| ln_x.checked_div(ln_base))
        .ok_or_else(out_of_range)?;
    let result_weight = ln_weight(x) - ln_weight(base);
    Ok(rounded(value, MIN_SIG_DIGITS - result_weight, &[base, x]))
}

/// 2201E for the argument of a logarithm that is zero or negative, as PostgreSQL says it.
fn logarithm_argument(x: Decimal) -> Result<()> {
    if x.is_zero() {
        return Err(SqlError::new("2201E", "cannot take logarithm of zero"));
    }
    if x.is_sign_negative() {
        return Err(SqlError::new(
            "2201E",
            "cannot take logarithm of a negative number",
        ));
    }
    Ok(())
}

fn out_of_range() -> SqlError {
    SqlError::new("22003", "value out of range for type numeric")
}

/// `value` rounded to `scale` decimals, but to no fewer than any of `arguments` shows, and
/// written with exactly that many.
fn rounded(value: Decimal, scale: i64, arguments: &[Decimal]) -> Decimal {
    let shown = arguments
        .iter()
        .map(|a| i64::from(a.scale()))
        .max()
        .unwrap_or(0);
    let scale = scale.max(shown).clamp(0, MAX_SCALE) as u32;
    with_scale(
        value.round_dp_with_strategy(scale, RoundingStrategy::MidpointAwayFromZero),
        scale,
    )
}

/// The decimal exponent of `x`'s leading digit, floor(log10 |x|) (0 for zero).
fn decimal_weight(x: Decimal) -> i64 {
    let digits = x.mantissa().unsigned_abs().checked_ilog10();
    digits.map_or(0, |d| i64::from(d) - i64::from(x.scale()))
}

/// The weight of `x`'s leading base-10000 digit, as PostgreSQL stores numerics.
fn nbase_weight(x: Decimal) -> i64 {
    decimal_weight(x).div_euclid(4)
}

/// PostgreSQL's `estimate_ln_dweight`: the decimal weight of ln(x), from x - 1 near 1, else
/// from x's first two base-10000 digits.
fn ln_weight(x: Decimal) -> i64 {
    let (low, high) = (Decimal::new(9, 1), Decimal::new(11, 1));
    if x >= low && x <= high {
        let near = x - Decimal::ONE;
        return if near.is_zero() {
            0
        } else {
            decimal_weight(near)
        };
    }
    if x.is_zero() {
        return 0;
    }
    let (digits, weight) = leading_nbase_digits(x);
    let ln = (digits as f64).ln() + weight as f64 * std::f64::consts::LN_10;
    ln.abs().log10() as i64
}

/// x ≈ digits × 10^weight from its first base-10000 digit, and the second if it has more
/// (PostgreSQL's two-digit estimate).
fn leading_nbase_digits(x: Decimal) -> (i128, i64) {
    let mantissa = x.mantissa().unsigned_abs() as i128;
    let first_exponent = 4 * nbase_weight(x);
    // x = mantissa × 10^-scale; the digit group of weight w is floor(x / 10^(4w)) mod 10000.
    let group_at = |exponent: i64| -> (i128, bool) {
        let shift = exponent + i64::from(x.scale());
        if shift >= 0 {
            let unit = 10i128.pow(shift as u32);
            (mantissa / unit, mantissa % unit != 0)
        } else {
            (mantissa * 10i128.pow((-shift) as u32), false)
        }
    };
    let (first, more) = group_at(first_exponent);
    if !more {
        return (first % 10_000, first_exponent);
    }
    let (two, _) = group_at(first_exponent - 4);
    (two % 100_000_000, first_exponent - 4)
}
