//! Date and time functions that work on calendar fields: `age`, `date_bin`, `make_timestamp`,
//! `make_timestamptz` and the `justify_*` family, with PostgreSQL's results and errors. Values are microseconds since
//! 2000-01-01 (local time for `timestamp`, UTC for `timestamptz`); a `timestamptz` is read in the
//! session's time zone where fields matter, as PostgreSQL does.

use steady_types::zone::{session_zone, Zone};
use steady_types::{
    civil_from_days, days_in_month, DataType, Interval, Value, PG_EPOCH_UNIX_DAYS, USECS_PER_DAY,
};

use crate::error::{Result, SqlError};
use crate::execution::executor::ExecCtx;
use crate::types::ops::{as_f64, as_i64, text_of};

const USECS_PER_SEC: i64 = 1_000_000;

/// A timestamp's calendar fields.
struct Fields {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    micros: i64,
}

impl Fields {
    fn of(local: i64) -> Fields {
        let (days, time) = (
            local.div_euclid(USECS_PER_DAY),
            local.rem_euclid(USECS_PER_DAY),
        );
        let (year, month, day) = civil_from_days(days + PG_EPOCH_UNIX_DAYS);
        let seconds = time / USECS_PER_SEC;
        Fields {
            year,
            month,
            day,
            hour: seconds / 3600,
            minute: seconds / 60 % 60,
            second: seconds % 60,
            micros: time % USECS_PER_SEC,
        }
    }
}

/// A date, timestamp or timestamptz argument (or a text one, read as a timestamptz) as local
/// microseconds; infinite values are out of range.
fn local_micros(value: &Value) -> Result<i64> {
    let local = match value {
        Value::Timestamp(t) => *t,
        Value::TimestampTz(t) if is_finite(*t) => session_zone().to_local(*t),
        Value::Date(d) if *d != i32::MAX && *d != i32::MIN => i64::from(*d) * USECS_PER_DAY,
        Value::Text(text) => {
            return local_micros(&Value::Text(text.clone()).cast_to(&DataType::TimestampTz)?)
        }
        _ => i64::MAX,
    };
    if is_finite(local) {
        Ok(local)
    } else {
        Err(SqlError::new("22008", "timestamp out of range"))
    }
}

fn is_finite(micros: i64) -> bool {
    micros != i64::MAX && micros != i64::MIN
}

/// `age(a, b)`: `a - b` as years, months, days and time, each field's difference borrowed from
/// the next larger one (PostgreSQL's `timestamp_age`); `age(a)` is `age(current_date, a)`.
pub(crate) fn age(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let (later, earlier) = match args {
        [one] => {
            let today = session_zone()
                .to_local(ctx.transaction_time())
                .div_euclid(USECS_PER_DAY);
            (today * USECS_PER_DAY, local_micros(one)?)
        }
        [a, b, ..] => (local_micros(a)?, local_micros(b)?),
        [] => unreachable!("age takes one or two arguments"),
    };
    let (f1, f2) = (Fields::of(later), Fields::of(earlier));
    let sign = if later < earlier { -1 } else { 1 };
    let mut micros = sign * (f1.micros - f2.micros);
    let mut second = sign * (f1.second - f2.second);
    let mut minute = sign * (f1.minute - f2.minute);
    let mut hour = sign * (f1.hour - f2.hour);
    let mut day = sign * (f1.day - f2.day);
    let mut month = sign * (f1.month - f2.month);
    let mut year = sign * (f1.year - f2.year);
    let borrow = |low: &mut i64, high: &mut i64, size: i64| {
        while *low < 0 {
            *low += size;
            *high -= 1;
        }
    };
    borrow(&mut micros, &mut second, USECS_PER_SEC);
    borrow(&mut second, &mut minute, 60);
    borrow(&mut minute, &mut hour, 60);
    borrow(&mut hour, &mut day, 24);
    let lender = if later < earlier { &f1 } else { &f2 };
    borrow(
        &mut day,
        &mut month,
        days_in_month(lender.year, lender.month),
    );
    borrow(&mut month, &mut year, 12);
    let out_of_range = || SqlError::new("22008", "interval out of range");
    Ok(Value::Interval(Interval {
        months: i32::try_from(sign * (year * 12 + month)).map_err(|_| out_of_range())?,
        days: i32::try_from(sign * day).map_err(|_| out_of_range())?,
        micros: sign * (((hour * 60 + minute) * 60 + second) * USECS_PER_SEC + micros),
    }))
}

/// `date_bin(stride, source, origin)`: the start of the stride-wide bin, counted from `origin`,
/// that `source` falls in; a stride of months or years is refused (0A000) and one of zero or
/// less is out of range (22008), as in PostgreSQL.
pub(crate) fn date_bin(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let Value::Interval(stride) = args[0].cast_to(&DataType::Interval)? else {
        return Err(SqlError::new("42883", "date_bin takes an interval stride"));
    };
    if stride.months != 0 {
        return Err(SqlError::new(
            "0A000",
            "timestamps cannot be binned into intervals containing months or years",
        ));
    }
    let stride = i64::from(stride.days) * USECS_PER_DAY + stride.micros;
    if stride <= 0 {
        return Err(SqlError::new("22008", "stride must be greater than zero"));
    }
    let (source, origin) = match (&args[1], &args[2]) {
        (Value::TimestampTz(s), Value::TimestampTz(o)) => (*s, *o),
        (source, origin) => (local_micros(source)?, local_micros(origin)?),
    };
    let overflow = || SqlError::new("22008", "timestamp out of range");
    let diff = source.checked_sub(origin).ok_or_else(overflow)?;
    let mut delta = diff - diff % stride;
    if diff < 0 && diff % stride != 0 {
        delta -= stride;
    }
    let binned = origin.checked_add(delta).ok_or_else(overflow)?;
    Ok(match &args[1] {
        Value::TimestampTz(_) => Value::TimestampTz(binned),
        _ => Value::Timestamp(binned),
    })
}

/// The parameters of `make_interval`, in order; each defaults to 0 and may be named
/// (`make_interval(days => 3)`).
pub const MAKE_INTERVAL_PARAMETERS: [&str; 7] =
    ["years", "months", "weeks", "days", "hours", "mins", "secs"];

/// `make_interval([years [, months [, weeks [, days [, hours [, mins [, secs]]]]]]])`: 22008
/// when a field overflows.
pub(crate) fn make_interval(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let field = |at: usize| args.get(at).map_or(0, as_i64);
    let overflow = || SqlError::new("22008", "interval out of range");
    let months = field(0)
        .checked_mul(12)
        .and_then(|m| m.checked_add(field(1)))
        .and_then(|m| i32::try_from(m).ok())
        .ok_or_else(overflow)?;
    let days = field(2)
        .checked_mul(7)
        .and_then(|d| d.checked_add(field(3)))
        .and_then(|d| i32::try_from(d).ok())
        .ok_or_else(overflow)?;
    let seconds = args.get(6).map_or(0.0, as_f64);
    let micros = (field(4) as f64 * 3600.0 + field(5) as f64 * 60.0 + seconds) * 1e6;
    if !micros.is_finite() || micros.abs() >= 9.2e18 {
        return Err(overflow());
    }
    Ok(Value::Interval(Interval {
        months,
        days,
        micros: micros.round() as i64,
    }))
}

/// `make_timestamp(year, month, day, hour, min, sec)`.
pub(crate) fn make_timestamp(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Timestamp(local_from_fields(args)?))
}

/// `make_timestamptz(year, month, day, hour, min, sec [, timezone])`: the local time in the
/// given zone, else the session's.
pub(crate) fn make_timestamptz(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let local = local_from_fields(args)?;
    let zone = match args.get(6) {
        Some(name) => {
            let name = text_of(name);
            Zone::named(&name).ok_or_else(|| {
                SqlError::new("22023", format!("time zone \"{name}\" not recognized"))
            })?
        }
        None => session_zone(),
    };
    Ok(Value::TimestampTz(zone.to_utc(local)))
}

/// Local microseconds of the first six arguments of `make_timestamp`: a date as `make_date`
/// takes it, a time of day as `make_time` does.
fn local_from_fields(args: &[Value]) -> Result<i64> {
    let date = date_from_fields(as_i64(&args[0]), as_i64(&args[1]), as_i64(&args[2]))?;
    let time = time_from_fields(as_i64(&args[3]), as_i64(&args[4]), as_f64(&args[5]))?;
    Ok(i64::from(date) * USECS_PER_DAY + time)
}

/// The date of `make_date(year, month, day)` (a negative year is BC; no year 0), 22008 for one
/// that does not exist.
pub(crate) fn date_from_fields(year: i64, month: i64, day: i64) -> Result<i32> {
    let era = if year < 0 { " BC" } else { "" };
    let text = format!("{:04}-{month:02}-{day:02}{era}", year.abs());
    match Value::parse(&DataType::Date, &text) {
        Ok(Value::Date(date)) if year != 0 => Ok(date),
        _ => Err(SqlError::new(
            "22008",
            format!("date field value out of range: {year}-{month:02}-{day:02}"),
        )),
    }
}

/// The time of day of `make_time(hour, min, sec)` in microseconds: PostgreSQL's range, up to
/// `24:00:00` with seconds below 60; 22008 beyond it.
pub(crate) fn time_from_fields(hour: i64, minute: i64, second: f64) -> Result<i64> {
    let in_range =
        (0..=24).contains(&hour) && (0..60).contains(&minute) && (0.0..60.0).contains(&second);
    let time = (hour * 60 + minute) * 60 * USECS_PER_SEC + (second * 1e6).round() as i64;
    if !in_range || time > USECS_PER_DAY {
        return Err(SqlError::new(
            "22008",
            format!("time field value out of range: {hour}:{minute:02}:{second:02}"),
        ));
    }
    Ok(time)
}

const DAYS_PER_MONTH: i64 = 30;

fn interval_argument(value: &Value) -> Result<Interval> {
    match value.cast_to(&DataType::Interval)? {
        Value::Interval(interval) => Ok(interval),
        _ => Err(SqlError::new("42883", "an interval argument is needed")),
    }
}

/// An interval from wide fields, 22008 when one does not fit.
fn interval_of(months: i64, days: i64, micros: i64) -> Result<Value> {
    let out_of_range = || SqlError::new("22008", "interval out of range");
    Ok(Value::Interval(Interval {
        months: i32::try_from(months).map_err(|_| out_of_range())?,
        days: i32::try_from(days).map_err(|_| out_of_range())?,
        micros,
    }))
}

/// Moves the whole `size`s of `part` into `whole` (hours into days, days into months).
fn carry(whole: &mut i64, part: &mut i64, size: i64) {
    *whole += *part / size;
    *part %= size;
}

/// Gives `part` the sign of `whole` by lending one `size` between them (PostgreSQL's justify
/// steps).
fn match_sign(whole: &mut i64, part: &mut i64, size: i64) {
    if *whole > 0 && *part < 0 {
        *part += size;
        *whole -= 1;
    } else if *whole < 0 && *part > 0 {
        *part -= size;
        *whole += 1;
    }
}

/// `justify_hours(interval)`: whole 24-hour spans of the time become days, the time then taking
/// the days' sign.
pub(crate) fn justify_hours(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let span = interval_argument(&args[0])?;
    let (mut days, mut micros) = (i64::from(span.days), span.micros);
    carry(&mut days, &mut micros, USECS_PER_DAY);
    match_sign(&mut days, &mut micros, USECS_PER_DAY);
    interval_of(i64::from(span.months), days, micros)
}

/// `justify_days(interval)`: whole 30-day spans become months, the days then taking the months'
/// sign.
pub(crate) fn justify_days(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let span = interval_argument(&args[0])?;
    let (mut months, mut days) = (i64::from(span.months), i64::from(span.days));
    carry(&mut months, &mut days, DAYS_PER_MONTH);
    match_sign(&mut months, &mut days, DAYS_PER_MONTH);
    interval_of(months, days, span.micros)
}

/// `justify_interval(interval)`: both, with every field then of one sign (PostgreSQL's order of
/// steps).
pub(crate) fn justify_interval(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let span = interval_argument(&args[0])?;
    let (mut months, mut days, mut micros) =
        (i64::from(span.months), i64::from(span.days), span.micros);
    if (days > 0 && micros > 0) || (days < 0 && micros < 0) {
        carry(&mut months, &mut days, DAYS_PER_MONTH);
    }
    carry(&mut days, &mut micros, USECS_PER_DAY);
    carry(&mut months, &mut days, DAYS_PER_MONTH);
    // The days take the months' sign, a zero day count the sign of the time.
    let days_sign = if days == 0 { micros.signum() } else { days };
    if months > 0 && days_sign < 0 {
        days += DAYS_PER_MONTH;
        months -= 1;
    } else if months < 0 && days_sign > 0 {
        days -= DAYS_PER_MONTH;
        months += 1;
    }
    match_sign(&mut days, &mut micros, USECS_PER_DAY);
    interval_of(months, days, micros)
}
