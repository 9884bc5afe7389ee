//! PostgreSQL text input of values (`Value::parse`): booleans, numbers with their range and
//! typmod checks, bytea in hex and escape formats, strings fitted to their declared length.

use std::str::FromStr;

use rust_decimal::{Decimal, RoundingStrategy};

use crate::*;

/// Trims what C's `isspace` calls whitespace, as PostgreSQL's input functions do.
pub(crate) fn pg_trim(text: &str) -> &str {
    text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c'))
}

pub(crate) fn parse_bool(text: &str) -> Result<bool, TypeError> {
    let s = pg_trim(text).to_ascii_lowercase();
    let abbreviates = |word: &str, min_len: usize| s.len() >= min_len && word.starts_with(&s);
    if abbreviates("true", 1) || abbreviates("yes", 1) || abbreviates("on", 2) || s == "1" {
        Ok(true)
    } else if abbreviates("false", 1) || abbreviates("no", 1) || abbreviates("off", 2) || s == "0" {
        Ok(false)
    } else {
        Err(invalid_syntax("boolean", text))
    }
}

pub(crate) fn parse_int(ty: &DataType, text: &str) -> Result<Value, TypeError> {
    let s = pg_trim(text);
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid_syntax(&ty.to_string(), text));
    }
    let out_of_range = || {
        TypeError::NumericValueOutOfRange(format!("value \"{text}\" is out of range for type {ty}"))
    };
    let wide: i64 = s.parse().map_err(|_| out_of_range())?;
    int_value(ty, wide).map_err(|_| out_of_range())
}

pub(crate) fn parse_double(text: &str) -> Result<f64, TypeError> {
    let s = pg_trim(text);
    let v: f64 = s
        .parse()
        .map_err(|_| invalid_syntax("double precision", text))?;
    check_float_input(s, v.is_infinite(), v == 0.0, "double precision")?;
    Ok(v)
}

pub(crate) fn parse_real(text: &str) -> Result<f32, TypeError> {
    let s = pg_trim(text);
    let v: f32 = s.parse().map_err(|_| invalid_syntax("real", text))?;
    check_float_input(s, v.is_infinite(), v == 0.0, "real")?;
    Ok(v)
}

/// Refuses input that overflowed to infinity or underflowed to zero, as `strtod`'s ERANGE does.
pub(crate) fn check_float_input(
    s: &str,
    infinite: bool,
    zero: bool,
    type_name: &str,
) -> Result<(), TypeError> {
    let spelled_infinite = s
        .trim_start_matches(['+', '-'])
        .get(..3)
        .is_some_and(|p| p.eq_ignore_ascii_case("inf"));
    let mantissa = s.split(['e', 'E']).next().unwrap_or("");
    let spelled_nonzero = mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
    if (infinite && !spelled_infinite) || (zero && spelled_nonzero) {
        return Err(TypeError::NumericValueOutOfRange(format!(
            "\"{s}\" is out of range for type {type_name}"
        )));
    }
    Ok(())
}

pub(crate) fn parse_numeric(text: &str) -> Result<Decimal, TypeError> {
    let s = pg_trim(text);
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s).to_ascii_lowercase();
    match unsigned.as_str() {
        "nan" => return Err(unsupported("numeric NaN is not supported")),
        "inf" | "infinity" => return Err(unsupported("numeric infinity is not supported")),
        _ => {}
    }
    let parts = DecimalText::split(s).ok_or_else(|| invalid_syntax("numeric", text))?;
    parts.to_decimal(text)
}

pub(crate) fn unsupported(message: &str) -> TypeError {
    TypeError::FeatureNotSupported(message.to_owned())
}

/// The pieces of `[+-]digits[.digits][e[+-]digits]`.
pub(crate) struct DecimalText<'a> {
    negative: bool,
    integer: &'a str,
    fraction: &'a str,
    exponent: i64,
}

impl<'a> DecimalText<'a> {
    pub(crate) fn split(s: &'a str) -> Option<Self> {
        let negative = s.starts_with('-');
        let s = s.strip_prefix(['+', '-']).unwrap_or(s);
        let (mantissa, exponent) = match s.split_once(['e', 'E']) {
            Some((m, e)) => (m, e.parse::<i64>().ok().filter(|e| e.abs() <= 1000)?),
            None => (s, 0),
        };
        let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
        let valid =
            all_digits(integer) && all_digits(fraction) && mantissa != "." && !mantissa.is_empty();
        valid.then_some(DecimalText {
            negative,
            integer,
            fraction,
            exponent,
        })
    }

    /// The value with PostgreSQL's display scale (`max(0, fraction digits - exponent)`), as far
    /// as a `Decimal`'s 28 digits allow; 22003 if it does not fit one, or only rounded (a value
    /// is never changed; trailing zeros of the scale may be dropped). `text` is the input, for
    /// the error.
    pub(crate) fn to_decimal(&self, text: &str) -> Result<Decimal, TypeError> {
        let digits = format!("{}{}", self.integer, self.fraction);
        let scale = self.fraction.len() as i64 - self.exponent;
        let plain = match usize::try_from(scale) {
            Ok(scale) => {
                let padded = format!("{digits:0>width$}", width = scale + 1);
                let (int, frac) = padded.split_at(padded.len() - scale);
                format!("{int}.{frac}")
            }
            Err(_) => format!("{digits}{}", "0".repeat(scale.unsigned_abs() as usize)),
        };
        let mut d = Decimal::from_str(&plain).map_err(|_| {
            TypeError::NumericValueOutOfRange("value overflows numeric format".to_owned())
        })?;
        if significant(&plain) != significant(&d.to_string()) {
            return Err(TypeError::NumericValueOutOfRange(format!(
                "numeric value {} has more digits than SteadyDB's numeric holds exactly (28)",
                pg_trim(text)
            )));
        }
        d.set_sign_negative(self.negative && !d.is_zero());
        Ok(d)
    }
}

/// The digits of an unsigned plain decimal (`123.450`) that make its value: without leading
/// zeros of the integer part and trailing zeros of the fraction (`123.45`).
fn significant(plain: &str) -> (&str, &str) {
    let (integer, fraction) = plain.split_once('.').unwrap_or((plain, ""));
    (
        integer.trim_start_matches('0'),
        fraction.trim_end_matches('0'),
    )
}

/// Rounds (half away from zero) to the column's scale and checks its precision.
pub(crate) fn apply_numeric_typmod(
    d: Decimal,
    precision: Option<u32>,
    scale: Option<u32>,
) -> Result<Decimal, TypeError> {
    let Some(precision) = precision else {
        return Ok(d);
    };
    let scale = scale.unwrap_or(0);
    let mut rounded = without_negative_zero(
        d.round_dp_with_strategy(scale, RoundingStrategy::MidpointAwayFromZero),
    );
    rounded.rescale(scale);
    let integer_digits = i64::from(precision) - i64::from(scale);
    match power_of_ten(integer_digits) {
        Some(bound) if rounded.abs() >= bound => {
            Err(TypeError::NumericFieldOverflow { precision, scale })
        }
        _ => Ok(rounded),
    }
}

pub(crate) fn without_negative_zero(mut d: Decimal) -> Decimal {
    if d.is_zero() {
        d.set_sign_positive(true);
    }
    d
}

/// 10^exponent, or `None` when it exceeds every `Decimal` (so bounds nothing).
pub(crate) fn power_of_ten(exponent: i64) -> Option<Decimal> {
    match exponent {
        29.. => None,
        0..=28 => Some(Decimal::from_i128_with_scale(
            10i128.pow(exponent as u32),
            0,
        )),
        -28..=-1 => Some(Decimal::from_i128_with_scale(
            1,
            exponent.unsigned_abs() as u32,
        )),
        _ => Some(Decimal::ZERO),
    }
}

pub(crate) fn parse_bytea(text: &str) -> Result<Vec<u8>, TypeError> {
    match text.strip_prefix("\\x") {
        Some(hex) => decode_hex(hex),
        None => decode_escaped(text.as_bytes()),
    }
}

/// Hex format: pairs of hex digits, whitespace allowed between pairs.
pub(crate) fn decode_hex(hex: &str) -> Result<Vec<u8>, TypeError> {
    let mut out = Vec::with_capacity(hex.len() / 2);
    let mut chars = hex.chars();
    while let Some(c) = chars.next() {
        if matches!(c, ' ' | '\t' | '\n' | '\r') {
            continue;
        }
        let low = chars.next().ok_or_else(|| {
            TypeError::InvalidParameterValue(
                "invalid hexadecimal data: odd number of digits".to_owned(),
            )
        })?;
        out.push(hex_digit(c)? << 4 | hex_digit(low)?);
    }
    Ok(out)
}

pub(crate) fn hex_digit(c: char) -> Result<u8, TypeError> {
    c.to_digit(16).map(|d| d as u8).ok_or_else(|| {
        TypeError::InvalidParameterValue(format!("invalid hexadecimal digit: \"{c}\""))
    })
}

/// Escape format: bytes as they are, `\\` for a backslash, `\ooo` (octal) for any byte.
pub(crate) fn decode_escaped(mut rest: &[u8]) -> Result<Vec<u8>, TypeError> {
    let mut out = Vec::with_capacity(rest.len());
    while let Some((&byte, tail)) = rest.split_first() {
        rest = match (byte, tail) {
            (b'\\', [b'\\', more @ ..]) => {
                out.push(b'\\');
                more
            }
            (b'\\', [a @ b'0'..=b'3', b @ b'0'..=b'7', c @ b'0'..=b'7', more @ ..]) => {
                out.push((a - b'0') << 6 | (b - b'0') << 3 | (c - b'0'));
                more
            }
            (b'\\', _) => {
                return Err(TypeError::InvalidTextRepresentation(
                    "invalid input syntax for type bytea".to_owned(),
                ))
            }
            _ => {
                out.push(byte);
                tail
            }
        };
    }
    Ok(out)
}

/// Appends `count` spaces (a chunk at a time: `char(n)` pads every value it stores).
fn pad_with_spaces(s: &mut String, mut count: usize) {
    const SPACES: &str = "                                                                ";
    s.reserve(count);
    while count > 0 {
        let chunk = count.min(SPACES.len());
        s.push_str(&SPACES[..chunk]);
        count -= chunk;
    }
}

/// Applies `char(n)`/`varchar(n)`: cuts to n characters (an error in an assignment unless only
/// spaces are cut) and pads `char(n)` with spaces.
pub(crate) fn fit_string(
    mut s: String,
    ty: &DataType,
    assignment: bool,
) -> Result<String, TypeError> {
    let limit = match *ty {
        DataType::Char(n) | DataType::Varchar(Some(n)) => n as usize,
        _ => return Ok(s),
    };
    // At most `limit` bytes are at most `limit` characters: only a longer string is walked.
    if s.len() > limit {
        if let Some((cut, _)) = s.char_indices().nth(limit) {
            if assignment && s[cut..].bytes().any(|b| b != b' ') {
                return Err(TypeError::StringDataRightTruncation(*ty));
            }
            s.truncate(cut);
        }
    }
    if let DataType::Char(_) = ty {
        let missing = limit - s.chars().count();
        pad_with_spaces(&mut s, missing);
    }
    Ok(s)
}
