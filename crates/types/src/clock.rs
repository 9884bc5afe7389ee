//! `time without time zone`: a time of day, kept as microseconds since midnight from `00:00:00`
//! to `24:00:00` inclusive, as PostgreSQL keeps it; its input, and its conversions to and from
//! timestamps and intervals.

use crate::calendar::{scan_datetime, scan_time, DateTimeFault, DateTimeFields, DateTimeInput};
use crate::*;

/// PostgreSQL's time input, around surrounding whitespace: `HH:MM[:SS[.f…]]` with an optional
/// `AM`/`PM` and an optional zone that is read and ignored (a numeric offset, `Z`, or a zone
/// name); a whole timestamp `YYYY-MM-DD HH:MM…` (its time is kept; not with a `T` between); `allballs` (midnight); and
/// `now` (the statement's local time).
pub(crate) fn parse_time(text: &str) -> Result<i64, TypeError> {
    let trimmed = pg_trim(text);
    match trimmed.to_ascii_lowercase().as_str() {
        "allballs" => return Ok(0),
        "now" => return Ok(crate::zone::local_now().rem_euclid(USECS_PER_DAY)),
        _ => {}
    }
    let fault = |f: DateTimeFault| f.into_error("time", text);
    let clock = without_zone(trimmed);
    if is_timestamp_text(clock) {
        // PostgreSQL's time input takes a date before the time only when a space separates them.
        if clock.contains(['T', 't']) {
            return Err(fault(DateTimeFault::Format));
        }
        return match scan_datetime(clock).map_err(fault)? {
            DateTimeInput::Finite { micros, .. } => Ok(micros),
            _ => Err(fault(DateTimeFault::Format)),
        };
    }
    let (clock, meridiem) = split_meridiem(clock);
    let fields = scan_clock(clock).ok_or(fault(DateTimeFault::Format))?;
    let hour = match meridiem {
        None => fields.hour,
        Some(_) if !(1..=12).contains(&fields.hour) => {
            return Err(fault(DateTimeFault::FieldRange))
        }
        Some(Meridiem::Am) => fields.hour % 12,
        Some(Meridiem::Pm) => fields.hour % 12 + 12,
    };
    let micros = ((hour * 60 + fields.minute) * 60 + fields.second) * 1_000_000 + fields.micros;
    let in_range = hour <= 24 && fields.minute <= 59 && fields.second <= 60;
    if in_range && (0..=USECS_PER_DAY).contains(&micros) {
        Ok(micros)
    } else {
        Err(fault(DateTimeFault::FieldRange))
    }
}

enum Meridiem {
    Am,
    Pm,
}

fn split_meridiem(text: &str) -> (&str, Option<Meridiem>) {
    let lower = text.to_ascii_lowercase();
    for (suffix, meridiem) in [("am", Meridiem::Am), ("pm", Meridiem::Pm)] {
        if lower.ends_with(suffix) {
            return (text[..text.len() - 2].trim_end(), Some(meridiem));
        }
    }
    (text, None)
}

/// `HH:MM[:SS[.f…]]` and nothing else.
fn scan_clock(text: &str) -> Option<DateTimeFields> {
    let mut scan = calendar::Scanner::new(text);
    let mut fields = DateTimeFields::default();
    scan_time(&mut scan, &mut fields)?;
    scan.at_end().then_some(fields)
}

/// Whether the text starts with a date (`YYYY-`), so that it is read as a whole timestamp.
fn is_timestamp_text(text: &str) -> bool {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    digits >= 3 && text.as_bytes().get(digits) == Some(&b'-')
}

/// The text without a zone written after the time: `Z`, `±HH[:MM]`, or a zone name. A time
/// without a time zone ignores the zone, as PostgreSQL's does.
fn without_zone(text: &str) -> &str {
    if let Some(rest) = text.strip_suffix(['Z', 'z']) {
        if rest.ends_with(|c: char| c.is_ascii_digit()) {
            return rest;
        }
    }
    if let Some(colon) = text.find(':') {
        if let Some(sign_at) = text[colon..].rfind(['+', '-']).map(|at| colon + at) {
            if crate::zone::numeric_offset(&text[sign_at..]).is_some() {
                return text[..sign_at].trim_end();
            }
        }
    }
    match text.rsplit_once(' ') {
        Some((rest, last))
            if last.starts_with(|c: char| c.is_ascii_alphabetic())
                && !["am", "pm", "bc", "ad"].contains(&last.to_ascii_lowercase().as_str())
                && crate::zone::Zone::named(last).is_some() =>
        {
            rest.trim_end()
        }
        _ => text,
    }
}

/// The time of day of a timestamp's local time (infinities have none).
pub(crate) fn time_of_timestamp(local: i64) -> Option<i64> {
    (local != i64::MAX && local != i64::MIN).then(|| local.rem_euclid(USECS_PER_DAY))
}

/// `interval::time`: the interval's time part modulo a day (its days and months ignored).
pub(crate) fn time_of_interval(interval: &Interval) -> i64 {
    interval.micros.rem_euclid(USECS_PER_DAY)
}

/// `time ± interval`: the time part of the interval added, wrapping around midnight.
pub fn add_interval_to_time(time: i64, interval: &Interval) -> i64 {
    (time + interval.micros.rem_euclid(USECS_PER_DAY)).rem_euclid(USECS_PER_DAY)
}
