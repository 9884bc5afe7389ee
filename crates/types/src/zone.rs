//! Time zones and `timestamp with time zone`.
//!
//! A `timestamptz` is an instant: microseconds since 2000-01-01 00:00 UTC. It is read and written
//! in the session's time zone (the `TimeZone` setting), which the session puts in this thread's
//! [`session_zone`] before it runs a statement and encodes its results — PostgreSQL keeps it in a
//! backend global the same way. Zones are IANA names read from the system's database
//! (`/usr/share/zoneinfo`, through `jiff`), any case, and `UTC`; a numeric TimeZone setting
//! (`+02:00`, which PostgreSQL reads with POSIX's inverted sign) is refused rather than guessed.
//!
//! Local time to instant follows PostgreSQL: a time skipped by a spring-forward transition takes
//! the offset before it (02:30 becomes 03:30 DST), a time repeated by a fall-back transition the
//! offset after it (standard time). Input may name its own zone: `Z`, `+05:30`, `-0800`, `+02`,
//! or a zone name after the time (`2024-06-01 12:00 Europe/Berlin`). Output is
//! `YYYY-MM-DD HH:MM:SS[.f]±HH[:MM[:SS]][ BC]`.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use jiff::tz::{AmbiguousOffset, Offset, TimeZone};

use crate::calendar::{civil_from_days, parse_timestamp, PG_EPOCH_UNIX_DAYS, USECS_PER_DAY};
use crate::output::{write_calendar_day, write_era, write_time_of_day};
use crate::TypeError;

const UNIX_EPOCH_MICROS: i64 = PG_EPOCH_UNIX_DAYS * USECS_PER_DAY;

/// A time zone: its name as the TimeZone setting shows it, and its rules.
#[derive(Clone, Debug)]
pub struct Zone {
    name: Arc<str>,
    rules: TimeZone,
}

impl Zone {
    pub fn utc() -> Zone {
        Zone {
            name: Arc::from("UTC"),
            rules: TimeZone::UTC,
        }
    }

    /// The zone an IANA name (any case) or `UTC` / `GMT` / `Z` names; None for anything else.
    pub fn named(name: &str) -> Option<Zone> {
        let name = name.trim();
        if ["utc", "gmt", "z", "zulu", "universal"].contains(&name.to_lowercase().as_str()) {
            return Some(Zone::utc());
        }
        let numeric = name.starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '-');
        if numeric || name.is_empty() {
            return None;
        }
        let rules = TimeZone::get(name).ok()?;
        let name = rules.iana_name().unwrap_or(name);
        Some(Zone {
            name: Arc::from(name),
            rules,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The zone's offset east of UTC, in microseconds, at the instant `utc`.
    pub fn offset_at(&self, utc: i64) -> i64 {
        let unix = utc.saturating_add(UNIX_EPOCH_MICROS);
        let min = jiff::Timestamp::MIN.as_microsecond();
        let max = jiff::Timestamp::MAX.as_microsecond();
        let instant = jiff::Timestamp::from_microsecond(unix.clamp(min, max))
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        offset_micros(self.rules.to_offset(instant))
    }

    /// The instant of local time `local` (microseconds since 2000-01-01, as a `timestamp`);
    /// the infinities stay themselves.
    pub fn to_utc(&self, local: i64) -> i64 {
        if local == i64::MAX || local == i64::MIN {
            return local;
        }
        let offset = match civil(local) {
            Some(datetime) => match self.rules.to_ambiguous_timestamp(datetime).offset() {
                AmbiguousOffset::Unambiguous { offset } => offset,
                AmbiguousOffset::Gap { before, .. } => before,
                AmbiguousOffset::Fold { after, .. } => after,
            },
            None => return local - self.offset_at(local),
        };
        local - offset_micros(offset)
    }

    /// The local time (a `timestamp`) of the instant `utc`; the infinities stay themselves.
    pub fn to_local(&self, utc: i64) -> i64 {
        match utc {
            i64::MAX | i64::MIN => utc,
            _ => utc.saturating_add(self.offset_at(utc)),
        }
    }
}

fn offset_micros(offset: Offset) -> i64 {
    i64::from(offset.seconds()) * 1_000_000
}

/// A local time as `jiff`'s civil datetime, if within its years (-9999..=9999).
fn civil(local: i64) -> Option<jiff::civil::DateTime> {
    let (year, month, day) = civil_from_days(local.div_euclid(USECS_PER_DAY) + PG_EPOCH_UNIX_DAYS);
    let micros = local.rem_euclid(USECS_PER_DAY);
    let seconds = micros / 1_000_000;
    jiff::civil::DateTime::new(
        i16::try_from(year).ok()?,
        month as i8,
        day as i8,
        (seconds / 3600) as i8,
        (seconds / 60 % 60) as i8,
        (seconds % 60) as i8,
        (micros % 1_000_000 * 1000) as i32,
    )
    .ok()
}

thread_local! {
    static SESSION_ZONE: RefCell<Zone> = RefCell::new(Zone::utc());
    /// The running transaction's start time (microseconds since 2000-01-01 UTC), as `now()`
    /// gives it.
    static TRANSACTION_TIME: std::cell::Cell<Option<i64>> = const { std::cell::Cell::new(None) };
}

/// Makes `micros` the start time of the transaction this thread runs a statement of: the time
/// that `now()`, `current_date` and the inputs `now`, `today`, `tomorrow` and `yesterday` give,
/// the same for every statement of a transaction block, as PostgreSQL's.
pub fn set_transaction_time(micros: i64) {
    TRANSACTION_TIME.with(|time| time.set(Some(micros)));
}

/// The transaction start time set on this thread, if any.
pub fn transaction_time() -> Option<i64> {
    TRANSACTION_TIME.with(std::cell::Cell::get)
}

/// The transaction's start time in the session zone's local time: the one set on this thread,
/// else the clock's.
pub(crate) fn local_now() -> i64 {
    let now = TRANSACTION_TIME
        .with(std::cell::Cell::get)
        .unwrap_or_else(|| {
            let unix = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as i64);
            unix - PG_EPOCH_UNIX_DAYS * USECS_PER_DAY
        });
    session_zone().to_local(now)
}

/// Makes `zone` this thread's session zone (see the module doc).
pub fn set_session_zone(zone: &Zone) {
    SESSION_ZONE.with(|current| *current.borrow_mut() = zone.clone());
}

/// Makes the zone named `name` this thread's session zone, unless it is already; an unknown
/// name (the TimeZone setting validates names) leaves UTC.
pub fn use_session_zone(name: &str) {
    let current = SESSION_ZONE.with(|current| *current.borrow().name == *name);
    if !current {
        set_session_zone(&Zone::named(name).unwrap_or_else(Zone::utc));
    }
}

/// What a session sets on the thread that runs its statement — its zone, DateStyle order and
/// transaction start — taken from that thread to be set on a helper thread (a parallel scan's),
/// so that expressions evaluated there read them as on the session's own.
#[derive(Debug, Clone)]
pub struct ThreadSettings {
    zone: Zone,
    date_order: crate::DateOrder,
    transaction_time: Option<i64>,
}

impl ThreadSettings {
    /// This thread's settings.
    pub fn current() -> Self {
        ThreadSettings {
            zone: session_zone(),
            date_order: crate::calendar::date_order(),
            transaction_time: transaction_time(),
        }
    }

    /// Makes them this thread's.
    pub fn install(&self) {
        set_session_zone(&self.zone);
        crate::use_date_order(self.date_order);
        TRANSACTION_TIME.with(|time| time.set(self.transaction_time));
    }
}

/// This thread's session zone.
pub fn session_zone() -> Zone {
    SESSION_ZONE.with(|current| current.borrow().clone())
}

/// Reads `timestamptz` input: a timestamp, with its own zone or in the session's.
pub(crate) fn parse_timestamptz(text: &str) -> Result<i64, TypeError> {
    let (local_text, zone) = split_zone(text.trim())?;
    let local = parse_timestamp(local_text).map_err(|err| match err {
        TypeError::InvalidDatetimeFormat(_) => TypeError::InvalidDatetimeFormat(format!(
            "invalid input syntax for type timestamp with time zone: \"{text}\""
        )),
        other => other,
    })?;
    if local == i64::MAX || local == i64::MIN || local_text.trim().eq_ignore_ascii_case("epoch") {
        return Ok(local);
    }
    Ok(match zone {
        GivenZone::Offset(offset) => local - offset,
        GivenZone::Named(zone) => zone.to_utc(local),
        GivenZone::Session => session_zone().to_utc(local),
    })
}

/// `timestamp without time zone` input: a zone written after the time is read and ignored, as
/// PostgreSQL does (`2024-01-01T10:00:00Z` is 2024-01-01 10:00:00).
pub(crate) fn parse_timestamp_ignoring_zone(text: &str) -> Result<i64, TypeError> {
    parse_timestamp(text).or_else(|err| match split_zone(text.trim()) {
        Ok((local, GivenZone::Offset(_) | GivenZone::Named(_))) => parse_timestamp(local),
        _ => Err(err),
    })
}

enum GivenZone {
    /// Microseconds east of UTC.
    Offset(i64),
    Named(Zone),
    Session,
}

/// Splits a zone written after the time off the input.
fn split_zone(text: &str) -> Result<(&str, GivenZone), TypeError> {
    if let Some(rest) = text.strip_suffix(['Z', 'z']) {
        if rest.ends_with(|c: char| c.is_ascii_digit()) {
            return Ok((rest, GivenZone::Offset(0)));
        }
    }
    if let Some(colon) = text.find(':') {
        if let Some(sign_at) = text[colon..].rfind(['+', '-']).map(|at| colon + at) {
            if let Some(offset) = numeric_offset(&text[sign_at..]) {
                return Ok((text[..sign_at].trim_end(), GivenZone::Offset(offset)));
            }
        }
    }
    if let Some((rest, last)) = text.rsplit_once(' ') {
        let named = last.starts_with(|c: char| c.is_ascii_alphabetic())
            && !["bc", "ad"].contains(&last.to_lowercase().as_str())
            && parse_timestamp(rest).is_ok();
        if named {
            let zone = Zone::named(last).ok_or_else(|| {
                TypeError::InvalidParameterValue(format!("time zone \"{last}\" not recognized"))
            })?;
            return Ok((rest, GivenZone::Named(zone)));
        }
    }
    Ok((text, GivenZone::Session))
}

/// `±HH`, `±HH:MM`, `±HHMM`, `±HH:MM:SS` as microseconds east of UTC.
pub(crate) fn numeric_offset(text: &str) -> Option<i64> {
    let (sign, digits) = match text.as_bytes().first()? {
        b'+' => (1, &text[1..]),
        b'-' => (-1, &text[1..]),
        _ => return None,
    };
    let parts: Vec<&str> = if digits.contains(':') {
        digits.split(':').collect()
    } else if digits.len() == 4 {
        vec![&digits[..2], &digits[2..]]
    } else {
        vec![digits]
    };
    if parts.is_empty() || parts.len() > 3 || parts.iter().any(|p| p.is_empty() || p.len() > 2) {
        return None;
    }
    let mut seconds = 0i64;
    for (part, unit) in parts.iter().zip([3600, 60, 1]) {
        seconds += part.parse::<i64>().ok()? * unit;
    }
    (seconds <= 15 * 3600 + 59 * 60 + 59).then_some(sign * seconds * 1_000_000)
}

/// Writes a `timestamptz` in the session zone.
pub(crate) fn write_timestamptz(f: &mut fmt::Formatter<'_>, utc: i64) -> fmt::Result {
    write_timestamptz_at(f, utc, |utc| session_zone().offset_at(utc))
}

/// A `timestamptz` written in UTC (`+00`) whatever the session zone: the form arrays keep their
/// elements in (see [`crate::array`]).
pub struct InUtc(pub i64);

impl fmt::Display for InUtc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_timestamptz_at(f, self.0, |_| 0)
    }
}

/// Writes a `timestamptz` at the offset `offset_at` gives for it.
fn write_timestamptz_at(
    f: &mut fmt::Formatter<'_>,
    utc: i64,
    offset_at: impl Fn(i64) -> i64,
) -> fmt::Result {
    match utc {
        i64::MAX => return f.write_str("infinity"),
        i64::MIN => return f.write_str("-infinity"),
        _ => {}
    }
    let offset = offset_at(utc);
    let local = utc + offset;
    let bc = write_calendar_day(f, local.div_euclid(USECS_PER_DAY))?;
    write_time_of_day(f, local.rem_euclid(USECS_PER_DAY))?;
    let seconds = offset.abs() / 1_000_000;
    let sign = if offset < 0 { '-' } else { '+' };
    write!(f, "{sign}{:02}", seconds / 3600)?;
    if seconds % 3600 != 0 {
        write!(f, ":{:02}", seconds / 60 % 60)?;
        if seconds % 60 != 0 {
            write!(f, ":{:02}", seconds % 60)?;
        }
    }
    write_era(f, bc)
}
