//! Formatting functions: `to_char` of dates, timestamps, intervals and numbers, `to_date`,
//! `to_timestamp` and `to_number` reading text by a template, `to_timestamp(epoch)`, and
//! `format`.
//!
//! Template patterns (PostgreSQL's names): `YYYY YYY YY Y`, `MM`, `Mon MON mon`, `Month MONTH
//! month`, `DD`, `DDD`, `D`, `Dy DY dy`, `Day DAY day`, `HH HH12 HH24`, `MI`, `SS`, `MS`, `US`,
//! `AM PM am pm`, `Q`, the `FM` prefix (no padding), and `"quoted text"`; any other character
//! is copied. Number templates: `9`, `0`, `.`, `D`, `,`, `G`, `FM`, and `S` / `MI` / `PL` for
//! the sign. A pattern this module does not know is an error (22007), never copied silently
//! into the output as if it were text.

use rust_decimal::Decimal;
use steady_types::{days_from_civil, Value, PG_EPOCH_UNIX_DAYS, USECS_PER_DAY};

use crate::error::{Result, SqlError};
use crate::execution::executor::ExecCtx;
use crate::execution::functions::{date, fields, numeric, strict, text, timestamptz, Function};
use crate::types::ops::{as_decimal, text_of};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

pub static FUNCTIONS: &[Function] = &[
    strict("to_char", (2, 2), text, to_char),
    strict("to_date", (2, 2), date, to_date),
    strict("to_timestamp", (1, 2), timestamptz, to_timestamp),
    strict("to_number", (2, 2), numeric, to_number),
    crate::execution::functions::lenient("format", (1, 100), text, format),
];

/// `to_number(text, template)`, as PostgreSQL reads the usual templates: leading text before the
/// number (a currency sign, spaces) is passed over, a `-` before it or after it or `<...>`
/// makes it negative, group separators (`,` or a space) between its digits are passed over, and
/// it takes at most as many integer and fraction digits as the template has `9` / `0` before and
/// after its decimal point (`.` or `D`); the scale is that of the digits read.
fn to_number(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let template = text_of(&args[1]);
    let (int_digits, frac_digits) = number_template_digits(&template)?;
    let input: Vec<char> = text_of(&args[0]).chars().collect();
    let mut at = 0;
    let mut negative = false;
    while at < input.len() && !input[at].is_ascii_digit() && input[at] != '.' {
        negative |= matches!(input[at], '-' | '<');
        at += 1;
    }
    let mut int = String::new();
    while let Some(&c) = input.get(at).filter(|_| int.len() < int_digits) {
        match c {
            '0'..='9' => int.push(c),
            ',' | ' ' if !int.is_empty() => {}
            _ => break,
        }
        at += 1;
    }
    let mut frac = String::new();
    if frac_digits.is_some() && input.get(at) == Some(&'.') {
        at += 1;
        while let Some(&c) = input.get(at).filter(|c| c.is_ascii_digit()) {
            if frac.len() < frac_digits.unwrap_or(0) {
                frac.push(c);
            }
            at += 1;
        }
    }
    while input.get(at).is_some_and(char::is_ascii_digit) {
        at += 1;
    }
    let rest: String = input[at..].iter().collect();
    negative |= matches!(rest.trim_start().chars().next(), Some('-' | '>'));
    if int.is_empty() && frac.is_empty() {
        return Err(SqlError::new(
            "22P02",
            "invalid input syntax for type numeric: \" \"",
        ));
    }
    let sign = if negative { "-" } else { "" };
    let int = if int.is_empty() { "0" } else { int.as_str() };
    let text = match frac.is_empty() {
        true => format!("{sign}{int}"),
        false => format!("{sign}{int}.{frac}"),
    };
    Ok(Value::parse(&NUMERIC_TYPE, &text)?)
}

const NUMERIC_TYPE: steady_types::DataType = steady_types::DataType::Numeric {
    precision: None,
    scale: None,
};

/// The digit positions of a number template before its decimal point, and after it (None when
/// it has none); 42601 for two decimal points, 0A000 for `EEEE`, which PostgreSQL cannot read.
fn number_template_digits(template: &str) -> Result<(usize, Option<usize>)> {
    if template.to_uppercase().contains("EEEE") {
        return Err(SqlError::new("0A000", "\"EEEE\" not supported for input"));
    }
    let (mut int_digits, mut frac_digits) = (0, None);
    for c in template.chars() {
        match (c, &mut frac_digits) {
            ('9' | '0', None) => int_digits += 1,
            ('9' | '0', Some(after)) => *after += 1,
            ('.' | 'D', None) => frac_digits = Some(0),
            ('.' | 'D', Some(_)) => return Err(SqlError::new("42601", "multiple decimal points")),
            _ => {}
        }
    }
    Ok((int_digits, frac_digits))
}

fn bad_format(what: impl std::fmt::Display) -> SqlError {
    SqlError::new("22007", format!("invalid format: {what}"))
}

/// The datetime patterns, longest first so that `MONTH` wins over `MON` and `MM`.
const PATTERNS: &[&str] = &[
    "MONTH", "Month", "month", "HH24", "HH12", "YYYY", "DAY", "Day", "day", "YYY", "MON", "Mon",
    "mon", "DDD", "HH", "MI", "SS", "MS", "US", "AM", "PM", "am", "pm", "YY", "MM", "DD", "DY",
    "Dy", "dy", "Y", "D", "Q",
];

/// One piece of a parsed template.
enum Piece<'t> {
    Pattern { name: &'static str, fill: bool },
    Text(&'t str),
}

fn parse_template(template: &str) -> Result<Vec<Piece<'_>>> {
    let mut pieces = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted
                .find('"')
                .ok_or_else(|| bad_format("unterminated quote"))?;
            pieces.push(Piece::Text(&quoted[..end]));
            rest = &quoted[end + 1..];
            continue;
        }
        let (fill, body) = match rest.strip_prefix("FM") {
            Some(body) => (false, body),
            None => (true, rest),
        };
        if let Some(name) = PATTERNS.iter().find(|p| body.starts_with(**p)) {
            pieces.push(Piece::Pattern { name, fill });
            rest = &body[name.len()..];
            continue;
        }
        let c = rest.chars().next().expect("not empty");
        if c.is_ascii_alphabetic() {
            return Err(bad_format(format!(
                "pattern \"{}\" is not supported",
                &rest[..1]
            )));
        }
        pieces.push(Piece::Text(&rest[..c.len_utf8()]));
        rest = &rest[c.len_utf8()..];
    }
    Ok(pieces)
}

fn cased(name: &str, word: &str) -> String {
    let upper = name
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    let lower = name.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    if upper && name.len() > 1 {
        word.to_uppercase()
    } else if lower {
        word.to_lowercase()
    } else {
        word.to_owned()
    }
}

fn padded(value: i64, width: usize, fill: bool) -> String {
    if fill {
        format!("{value:0width$}")
    } else {
        value.to_string()
    }
}

/// `to_char(date | timestamp | timestamptz | number, template)`.
fn to_char(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let template = args[1].to_string();
    match &args[0] {
        Value::Date(_) | Value::Timestamp(_) | Value::TimestampTz(_) => {
            datetime_text(&args[0], &template).map(Value::Text)
        }
        Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_) | Value::Numeric(_) => {
            number_text(as_decimal(&args[0])?, &template).map(Value::Text)
        }
        Value::Interval(span) => interval_text(span, &template).map(Value::Text),
        Value::Real(_) | Value::Double(_) => {
            let x = crate::types::ops::as_f64(&args[0]);
            let d = Decimal::try_from(x).map_err(|_| bad_format("a float out of range"))?;
            number_text(d, &template).map(Value::Text)
        }
        other => Err(SqlError::undefined_function(format!(
            "function to_char({}, text) does not exist",
            crate::types::type_name(other.data_type())
        ))),
    }
}

fn datetime_text(value: &Value, template: &str) -> Result<String> {
    if matches!(
        value,
        Value::Timestamp(i64::MIN | i64::MAX)
            | Value::TimestampTz(i64::MIN | i64::MAX)
            | Value::Date(i32::MIN | i32::MAX)
    ) {
        return Ok(String::new());
    }
    let (year, month, day, micros) = fields(value)?;
    let days = days_from_civil(year, month, day);
    let weekday = (days + 4).rem_euclid(7) as usize;
    let day_of_year = days - days_from_civil(year, 1, 1) + 1;
    let (hour, minute, second) = (
        micros / 3_600_000_000,
        micros / 60_000_000 % 60,
        micros / 1_000_000 % 60,
    );
    let hour12 = (hour + 11) % 12 + 1;
    render(template, |name, fill| {
        let word = |words: &[&str], at: usize, short: bool| {
            let w = if short { &words[at][..3] } else { words[at] };
            let w = cased(name, w);
            if fill && !short {
                format!("{w:<9}")
            } else {
                w
            }
        };
        Ok(match name {
            "YYYY" => padded(year, 4, fill),
            "YYY" => padded(year % 1000, 3, fill),
            "YY" => padded(year % 100, 2, fill),
            "Y" => (year % 10).to_string(),
            "MM" => padded(month, 2, fill),
            "DD" => padded(day, 2, fill),
            "DDD" => padded(day_of_year, 3, fill),
            "D" => (weekday + 1).to_string(),
            "Q" => ((month - 1) / 3 + 1).to_string(),
            "HH" | "HH12" => padded(hour12, 2, fill),
            "HH24" => padded(hour, 2, fill),
            "MI" => padded(minute, 2, fill),
            "SS" => padded(second, 2, fill),
            "MS" => padded(micros / 1000 % 1000, 3, fill),
            "US" => padded(micros % 1_000_000, 6, fill),
            "AM" | "PM" => (if hour < 12 { "AM" } else { "PM" }).to_owned(),
            "am" | "pm" => (if hour < 12 { "am" } else { "pm" }).to_owned(),
            "Month" | "MONTH" | "month" => word(&MONTHS, month as usize - 1, false),
            "Mon" | "MON" | "mon" => word(&MONTHS, month as usize - 1, true),
            "Day" | "DAY" | "day" => word(&DAYS, weekday, false),
            _ => word(&DAYS, weekday, true),
        })
    })
}

/// An interval by a template of its fields, as PostgreSQL writes them: years and the months
/// left (`YYYY`...`Y`, `MM`), days (`DD`), hours not folded into days (`HH24`, `HH` / `HH12` on a
/// 12-hour clock), `MI`, `SS`, `MS`, `US`; a negative field keeps its minus sign inside the
/// width (`-01`). The calendar patterns (month and day names, `D`, `DDD`, `Q`, `AM`) mean
/// nothing for an interval and are refused (0A000) rather than guessed.
fn interval_text(span: &steady_types::Interval, template: &str) -> Result<String> {
    let months = i64::from(span.months);
    let (year, month, day) = (months / 12, months % 12, i64::from(span.days));
    let micros = span.micros;
    let hour = micros / 3_600_000_000;
    let (minute, second) = (micros / 60_000_000 % 60, micros / 1_000_000 % 60);
    // Two digits, or three with a minus sign (PostgreSQL's width for these interval fields).
    let signed = |value: i64, fill: bool| padded(value, if value < 0 { 3 } else { 2 }, fill);
    render(template, |name, fill| {
        Ok(match name {
            "YYYY" => padded(year, 4, fill),
            "YYY" => padded(year % 1000, 3, fill),
            "YY" => padded(year % 100, 2, fill),
            "Y" => (year % 10).to_string(),
            "MM" => signed(month, fill),
            "DD" => padded(day, 2, fill),
            "HH" | "HH12" => padded(if hour % 12 == 0 { 12 } else { hour % 12 }, 2, fill),
            "HH24" => signed(hour, fill),
            "MI" => signed(minute, fill),
            "SS" => signed(second, fill),
            "MS" => padded(micros / 1000 % 1000, 3, fill),
            "US" => padded(micros % 1_000_000, 6, fill),
            other => {
                return Err(SqlError::unsupported(format!(
                    "to_char of an interval with the pattern {other}"
                )))
            }
        })
    })
}

/// `template` with each pattern replaced by what `field(name, fill)` writes for it (`fill`: no
/// `FM` prefix) and its text copied.
fn render(
    template: &str,
    mut field: impl FnMut(&'static str, bool) -> Result<String>,
) -> Result<String> {
    let mut out = String::new();
    for piece in parse_template(template)? {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Pattern { name, fill } => out.push_str(&field(name, fill)?),
        }
    }
    Ok(out)
}

/// A number by a template of `9` / `0` digits, a decimal point, group separators and a sign.
fn number_text(value: Decimal, template: &str) -> Result<String> {
    let fill = !template.starts_with("FM");
    let body = template.trim_start_matches("FM");
    let explicit_sign = body.starts_with('S') || body.ends_with('S');
    let (sign_end, body) = match (body.strip_suffix("MI"), body.strip_suffix("PL")) {
        (Some(b), _) | (_, Some(b)) => (true, b),
        _ => (false, body),
    };
    let body = body.trim_matches('S');
    if let Some(c) = body.chars().find(|c| !"90.D,G".contains(*c)) {
        return Err(bad_format(format!(
            "\"{c}\" in a number template is not supported"
        )));
    }
    let (int_template, frac_template) = match body.find(['.', 'D']) {
        Some(at) => (&body[..at], &body[at + 1..]),
        None => (body, ""),
    };
    let frac_digits = frac_template
        .chars()
        .filter(|c| matches!(c, '9' | '0'))
        .count();
    let rounded = value.round_dp(frac_digits as u32).abs();
    let text = format!("{rounded:.frac_digits$}");
    let (int_part, frac_part) = text.split_once('.').unwrap_or((&text, ""));
    let int_slots = int_template
        .chars()
        .filter(|c| matches!(c, '9' | '0'))
        .count();
    if int_part.trim_start_matches('0').len() > int_slots {
        let hashes: String = body
            .chars()
            .map(|c| if matches!(c, '9' | '0') { '#' } else { c })
            .collect();
        return Ok(format!(" {hashes}"));
    }
    let digits: Vec<char> = match int_part {
        "0" => Vec::new(),
        digits => digits.chars().collect(),
    };
    let mut int_out = String::new();
    let mut next = digits.len() as isize - 1;
    let mut significant = true;
    for c in int_template.chars().rev() {
        match c {
            '9' | '0' => {
                let digit = (next >= 0).then(|| digits[next as usize]);
                next -= 1;
                match digit {
                    Some(d) => int_out.insert(0, d),
                    _ if c == '0' => int_out.insert(0, '0'),
                    _ => {
                        significant = false;
                        int_out.insert(0, ' ');
                    }
                }
            }
            _ => int_out.insert(0, if significant { ',' } else { ' ' }),
        }
    }
    let negative = value.is_sign_negative() && !rounded.is_zero();
    let mut out = int_out;
    if !frac_template.is_empty() {
        out.push('.');
        out.push_str(frac_part);
    }
    let sign = match (negative, explicit_sign) {
        (true, _) => "-",
        (false, true) => "+",
        (false, false) => " ",
    };
    let start = out.len() - out.trim_start().len();
    let mut out = if sign_end {
        format!("{out}{}", if negative { "-" } else { " " })
    } else {
        format!("{}{sign}{}", &out[..start], &out[start..])
    };
    if !fill {
        out = out.trim().to_owned();
        // FM drops the fraction's trailing zeros written by `9`s; a `0` keeps its digit and
        // those before it (`FM0.90` writes 0.50).
        let kept = frac_template
            .chars()
            .filter(|c| matches!(c, '9' | '0'))
            .collect::<Vec<_>>()
            .iter()
            .rposition(|&c| c == '0')
            .map_or(0, |at| at + 1);
        if let Some(point) = out.find('.') {
            let fraction = &out[point + 1..];
            let digits = fraction
                .trim_end_matches('0')
                .len()
                .max(kept.min(fraction.len()));
            out.truncate(point + 1 + digits);
        }
    }
    Ok(out)
}

/// Reads `text` by `template`: (year, month, day, micros into the day).
fn read_by_template(text: &str, template: &str) -> Result<(i64, i64, i64, i64)> {
    let bad = || {
        SqlError::new(
            "22007",
            format!("invalid value \"{text}\" for template \"{template}\""),
        )
    };
    let (mut year, mut month, mut day, mut micros) = (1i64, 1i64, 1i64, 0i64);
    let mut pm = None;
    let mut rest = text.trim_start();
    for piece in parse_template(template)? {
        let name = match piece {
            Piece::Text(_) => {
                rest = rest.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
                continue;
            }
            Piece::Pattern { name, .. } => name,
        };
        rest = rest.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
        if matches!(name, "Month" | "MONTH" | "month" | "Mon" | "MON" | "mon") {
            let lower = rest.to_lowercase();
            let at = MONTHS
                .iter()
                .position(|m| lower.starts_with(&m[..3].to_lowercase()))
                .ok_or_else(bad)?;
            let full = lower.starts_with(&MONTHS[at].to_lowercase());
            rest = &rest[if full && name.len() > 3 {
                MONTHS[at].len()
            } else {
                3
            }..];
            month = at as i64 + 1;
            continue;
        }
        if matches!(name, "AM" | "PM" | "am" | "pm") {
            let word = rest.get(..2).ok_or_else(bad)?.to_uppercase();
            pm = Some(word == "PM");
            rest = &rest[2..];
            continue;
        }
        let width = match name {
            "YYYY" => 4,
            "MS" => 3,
            "US" => 6,
            "DDD" | "YYY" => 3,
            _ => 2,
        };
        let end = rest
            .char_indices()
            .take_while(|(i, c)| *i < width && c.is_ascii_digit())
            .count();
        let n: i64 = rest[..end].parse().map_err(|_| bad())?;
        rest = &rest[end..];
        match name {
            "YYYY" | "YYY" => year = n,
            "YY" => year = 2000 + n - if n >= 70 { 100 } else { 0 },
            "MM" => month = n,
            "DD" => day = n,
            "HH" | "HH12" | "HH24" => micros += n * 3_600_000_000,
            "MI" => micros += n * 60_000_000,
            "SS" => micros += n * 1_000_000,
            "MS" => micros += n * 1000,
            "US" => micros += n,
            other => return Err(bad_format(format!("pattern \"{other}\" cannot be read"))),
        }
    }
    if pm == Some(true) && micros < 12 * 3_600_000_000 {
        micros += 12 * 3_600_000_000;
    }
    let real_day = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && steady_types::civil_from_days(days_from_civil(year, month, day)) == (year, month, day);
    if !real_day {
        return Err(SqlError::new(
            "22008",
            format!("date/time field value out of range: \"{text}\""),
        ));
    }
    Ok((year, month, day, micros))
}

fn days_of(year: i64, month: i64, day: i64) -> i64 {
    days_from_civil(year, month, day) - PG_EPOCH_UNIX_DAYS
}

fn to_date(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (year, month, day, _) = read_by_template(&args[0].to_string(), &args[1].to_string())?;
    let days = i32::try_from(days_of(year, month, day))
        .map_err(|_| SqlError::new("22008", "date out of range"))?;
    Ok(Value::Date(days))
}

/// `to_timestamp(seconds since 1970)` or `to_timestamp(text, template)` (in the session zone).
fn to_timestamp(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if args.len() == 1 {
        let seconds = crate::types::ops::as_f64(&args[0]);
        if !seconds.is_finite() {
            return Ok(Value::TimestampTz(if seconds > 0.0 {
                i64::MAX
            } else {
                i64::MIN
            }));
        }
        let unix_micros = (seconds * 1e6).round();
        let micros = unix_micros - (PG_EPOCH_UNIX_DAYS * USECS_PER_DAY) as f64;
        if micros.abs() > 9.2e18 {
            return Err(SqlError::new("22008", "timestamp out of range"));
        }
        return Ok(Value::TimestampTz(micros as i64));
    }
    let (year, month, day, micros) = read_by_template(&args[0].to_string(), &args[1].to_string())?;
    let local = days_of(year, month, day) * USECS_PER_DAY + micros;
    Ok(Value::TimestampTz(
        steady_types::zone::session_zone().to_utc(local),
    ))
}

/// `format(template, args...)`: `%s` (text, NULL as empty), `%I` (an identifier, quoted when
/// needed), `%L` (a literal, NULL as NULL), `%%`, each as `%[n$][-][width]type` — an argument
/// position, left-justified, padded with spaces to `width` characters (`*` or `*n$`: the width
/// is an argument; a negative one left-justifies), as PostgreSQL's.
fn format(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let Some(template) = args.first().filter(|t| !t.is_null()) else {
        return Ok(Value::Null);
    };
    let template = template.to_string();
    let mut out = String::new();
    let mut chars = template.chars().peekable();
    let mut next_arg = 1;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        let spec = FormatSpec::read(&mut chars, args, &mut next_arg)?;
        let kind = chars
            .next()
            .ok_or_else(|| SqlError::new("22023", "unterminated format() type specifier"))?;
        let value = args
            .get(spec.at)
            .ok_or_else(|| SqlError::new("22023", "too few arguments for format()"))?;
        next_arg = spec.at + 1;
        let text = match kind {
            's' => value.to_pg_text().unwrap_or_default(),
            'I' => {
                let text = value.to_pg_text().ok_or_else(|| {
                    SqlError::new(
                        "22004",
                        "null values cannot be formatted as an SQL identifier",
                    )
                })?;
                crate::types::quote_ident(&text)
            }
            'L' => value
                .to_pg_text()
                .map_or("NULL".to_owned(), |t| quote_literal(&t)),
            other => {
                return Err(SqlError::new(
                    "22023",
                    format!("unrecognized format() type specifier \"{other}\""),
                ))
            }
        };
        spec.pad(&text, &mut out);
    }
    Ok(Value::Text(out))
}

/// One `%[n$][-][width]` of a format() template, read.
struct FormatSpec {
    /// The argument it formats.
    at: usize,
    left: bool,
    width: usize,
}

impl FormatSpec {
    fn read(
        chars: &mut std::iter::Peekable<std::str::Chars>,
        args: &[Value],
        next_arg: &mut usize,
    ) -> Result<FormatSpec> {
        let digits = |chars: &mut std::iter::Peekable<std::str::Chars>| {
            let mut text = String::new();
            while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                text.push(*d);
                chars.next();
            }
            text
        };
        let number = |text: &str| {
            text.parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    SqlError::new(
                        "22023",
                        "format specifies argument 0, but arguments are numbered from 1",
                    )
                })
        };
        let mut leading = digits(chars);
        let mut position = None;
        if !leading.is_empty() && chars.peek() == Some(&'$') {
            chars.next();
            position = Some(number(&leading)?);
            leading.clear();
        }
        let mut left = false;
        while leading.is_empty() && chars.peek() == Some(&'-') {
            chars.next();
            left = true;
        }
        let mut width: i64 = 0;
        if leading.is_empty() && chars.peek() == Some(&'*') {
            chars.next();
            let from = digits(chars);
            let width_at = if from.is_empty() {
                let at = *next_arg;
                *next_arg += 1;
                at
            } else {
                if chars.next() != Some('$') {
                    return Err(SqlError::new(
                        "22023",
                        "unterminated format() type specifier",
                    ));
                }
                // As PostgreSQL's: the value is then the argument after the width's.
                let at = number(&from)?;
                *next_arg = at + 1;
                at
            };
            let value = args
                .get(width_at)
                .ok_or_else(|| SqlError::new("22023", "too few arguments for format()"))?;
            width = if value.is_null() {
                0
            } else {
                crate::types::ops::as_i64(value)
            };
        } else {
            let text = if leading.is_empty() {
                digits(chars)
            } else {
                leading
            };
            if !text.is_empty() {
                width = text
                    .parse()
                    .map_err(|_| SqlError::new("22023", "number is out of range"))?;
            }
        }
        Ok(FormatSpec {
            at: position.unwrap_or(*next_arg),
            left: left || width < 0,
            width: width.unsigned_abs() as usize,
        })
    }

    /// `text` padded with spaces to the width, on the side the spec says.
    fn pad(&self, text: &str, out: &mut String) {
        let fill = " ".repeat(self.width.saturating_sub(text.chars().count()));
        if self.left {
            out.push_str(text);
            out.push_str(&fill);
        } else {
            out.push_str(&fill);
            out.push_str(text);
        }
    }
}

/// A string as a SQL literal (`E'...'` when it holds a backslash).
pub fn quote_literal(text: &str) -> String {
    let quoted = text.replace('\'', "''");
    if text.contains('\\') {
        format!("E'{}'", quoted.replace('\\', "\\\\"))
    } else {
        format!("'{quoted}'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_their_templates() {
        let n = |v: &str, t: &str| number_text(v.parse().unwrap(), t).unwrap();
        assert_eq!(n("123.456", "999.99"), " 123.46");
        assert_eq!(n("5", "000"), " 005");
        assert_eq!(n("-5", "999"), "  -5");
        assert_eq!(n("1234567", "9,999,999"), " 1,234,567");
        assert_eq!(n("12.5", "FM999.99"), "12.5");
        assert_eq!(n("1000", "99"), " ##");
        assert_eq!(n("7", "FM00"), "07");
        assert_eq!(n("0.5", "FM0.00"), "0.50");
        assert_eq!(n("0.5", "FM0.09"), "0.5");
        assert_eq!(n("3", "FM9.99"), "3.");
        assert!(number_text(Decimal::ONE, "99X").is_err());
        assert_eq!(n("0.5", "0.99"), " 0.50");
        assert_eq!(n("0.5", "9.99"), "  .50");
        assert_eq!(n("-12.5", "S999.9"), " -12.5");
        assert_eq!(n("12", "999MI"), " 12 ");
        assert_eq!(n("-12", "999MI"), " 12-");
    }
}
