//! Session settings (`SET`, `SHOW`, `RESET`, `current_setting`): the parameters clients read and
//! write, with PostgreSQL's defaults, validation and display forms (`5s`, `ISO, MDY`).

use std::collections::BTreeMap;
use std::time::Duration;

use steady_engine::engine::Isolation;
use steady_types::DateOrder;

use crate::error::{Result, SqlError};

/// The PostgreSQL version SteadyDB reports (clients pick their SQL by it).
pub const SERVER_VERSION: &str = "15.6";

/// Parameters, their defaults, and whether a session may change them.
const PARAMETERS: &[(&str, &str, bool)] = &[
    ("application_name", "", true),
    ("client_encoding", "UTF8", true),
    ("client_min_messages", "notice", true),
    ("datestyle", "ISO, MDY", true),
    ("default_transaction_isolation", "read committed", true),
    ("default_transaction_read_only", "off", true),
    ("extra_float_digits", "1", true),
    ("idle_in_transaction_session_timeout", "0", true),
    ("integer_datetimes", "on", false),
    ("intervalstyle", "postgres", true),
    ("lock_timeout", "0", true),
    ("log_min_duration_statement", "-1", true),
    ("max_connections", "100", false),
    ("max_identifier_length", "63", false),
    ("max_parallel_workers_per_gather", "2", true),
    ("block_size", "8192", false),
    ("check_function_bodies", "on", true),
    ("default_table_access_method", "heap", true),
    ("default_tablespace", "", true),
    ("row_security", "on", true),
    ("synchronize_seqscans", "on", true),
    ("xmloption", "content", true),
    ("search_path", "\"$user\", public", true),
    ("server_encoding", "UTF8", false),
    ("server_version", SERVER_VERSION, false),
    ("server_version_num", "150006", false),
    ("standard_conforming_strings", "on", true),
    ("statement_timeout", "0", true),
    ("synchronous_commit", "on", true),
    ("timezone", "UTC", true),
    ("work_mem", "4MB", true),
    ("is_superuser", "on", false),
    ("session_authorization", "steady", false),
];

/// The parameters a client is told of at startup and whenever they change (PostgreSQL's
/// GUC_REPORT): the name ParameterStatus uses, and the setting's.
pub const REPORTED_PARAMETERS: &[(&str, &str)] = &[
    ("TimeZone", "timezone"),
    ("application_name", "application_name"),
    ("DateStyle", "datestyle"),
    ("IntervalStyle", "intervalstyle"),
    ("client_encoding", "client_encoding"),
    (
        "default_transaction_read_only",
        "default_transaction_read_only",
    ),
    ("standard_conforming_strings", "standard_conforming_strings"),
];

const TIMEOUTS: &[&str] = &[
    "statement_timeout",
    "lock_timeout",
    "idle_in_transaction_session_timeout",
];

/// One session's settings, and the defaults that `DEFAULT` and `RESET` return them to: the
/// built-in ones, or the server's (steady.toml), as postgresql.conf's are PostgreSQL's.
#[derive(Debug, Clone)]
pub struct Settings {
    values: BTreeMap<&'static str, String>,
    defaults: BTreeMap<&'static str, String>,
}

impl Default for Settings {
    fn default() -> Self {
        let defaults: BTreeMap<&'static str, String> = PARAMETERS
            .iter()
            .map(|(name, value, _)| (*name, (*value).to_owned()))
            .collect();
        Settings {
            values: defaults.clone(),
            defaults,
        }
    }
}

fn parameter(name: &str) -> Result<&'static (&'static str, &'static str, bool)> {
    let lower = name.to_lowercase();
    PARAMETERS
        .iter()
        .find(|(n, _, _)| *n == lower)
        .ok_or_else(|| {
            SqlError::new(
                "42704",
                format!("unrecognized configuration parameter \"{name}\""),
            )
        })
}

impl Settings {
    /// `SET name = value`; `DEFAULT` resets.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let (key, _, settable) = *parameter(name)?;
        if !settable {
            return Err(SqlError::new(
                "55P02",
                format!("parameter \"{key}\" cannot be changed now"),
            ));
        }
        let value = if value.eq_ignore_ascii_case("default") {
            self.defaults[key].clone()
        } else if key == "datestyle" {
            datestyle(value, &self.values[key])?
        } else {
            normalize(key, value)?
        };
        self.values.insert(key, value);
        Ok(())
    }

    /// Makes `value` the default of the settable parameter `name` (and its value now): a server
    /// setting from steady.toml, for the sessions started with these settings.
    pub fn set_default(&mut self, name: &str, value: &str) -> Result<()> {
        self.set(name, value)?;
        let (key, _, _) = *parameter(name)?;
        self.defaults.insert(key, self.values[key].clone());
        Ok(())
    }

    /// `RESET name` (`RESET ALL` with `None`).
    pub fn reset(&mut self, name: Option<&str>) -> Result<()> {
        match name {
            None => self.values = self.defaults.clone(),
            Some(name) => {
                let (key, _, _) = *parameter(name)?;
                self.values.insert(key, self.defaults[key].clone());
            }
        }
        Ok(())
    }

    pub fn show(&self, name: &str) -> Result<String> {
        let (key, _, _) = *parameter(name)?;
        let value = self.values.get(key).cloned().unwrap_or_default();
        let in_ms = TIMEOUTS.contains(&key) || key == "log_min_duration_statement" && value != "-1";
        Ok(if in_ms {
            show_duration(value.parse().unwrap_or(0))
        } else {
            value
        })
    }

    /// `log_min_duration_statement`: statements that take at least this long are logged with
    /// their duration; `None` when off (-1).
    pub fn log_min_duration(&self) -> Option<Duration> {
        let ms: u64 = self
            .values
            .get("log_min_duration_statement")?
            .parse()
            .ok()?;
        Some(Duration::from_millis(ms))
    }

    /// Every parameter with its value (for `SHOW ALL` and the startup ParameterStatus messages).
    pub fn all(&self) -> Vec<(String, String)> {
        self.values
            .keys()
            .map(|k| (k.to_string(), self.show(k).unwrap_or_default()))
            .collect()
    }

    pub fn default_isolation(&self) -> Isolation {
        match self
            .values
            .get("default_transaction_isolation")
            .map(String::as_str)
        {
            Some("read uncommitted") => Isolation::ReadUncommitted,
            Some("repeatable read") => Isolation::RepeatableRead,
            Some("serializable") => Isolation::Serializable,
            _ => Isolation::ReadCommitted,
        }
    }

    /// How many threads besides the session's own may work on one scan.
    pub fn parallel_workers(&self) -> usize {
        self.values
            .get("max_parallel_workers_per_gather")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// The parameters a client is told of when they change, by the names ParameterStatus
    /// uses, with their values.
    pub fn reported(&self) -> Vec<(&'static str, String)> {
        REPORTED_PARAMETERS
            .iter()
            .map(|&(reported, key)| (reported, self.show(key).unwrap_or_default()))
            .collect()
    }

    /// The TimeZone setting: a name [`steady_types::zone::Zone::named`] knows.
    /// The order DateStyle reads numeric dates in.
    pub fn date_order(&self) -> DateOrder {
        match self.values.get("datestyle").map(String::as_str) {
            Some(style) if style.ends_with("DMY") => DateOrder::Dmy,
            Some(style) if style.ends_with("YMD") => DateOrder::Ymd,
            _ => DateOrder::Mdy,
        }
    }

    pub fn timezone(&self) -> &str {
        self.values.get("timezone").map_or("UTC", String::as_str)
    }

    /// A timeout setting; `None` when off.
    pub fn timeout(&self, name: &str) -> Option<Duration> {
        let ms: u64 = self.values.get(name)?.parse().ok()?;
        (ms > 0).then(|| Duration::from_millis(ms))
    }
}

/// Validates a value and brings it to the stored form.
/// DateStyle: the output style, ISO (the only one SteadyDB writes: SQL, Postgres and German are
/// refused with 0A000), and the order numeric dates are read in (MDY, DMY or YMD, and their
/// other names); an order not given stays `current`'s, as in PostgreSQL.
fn datestyle(value: &str, current: &str) -> Result<String> {
    let mut order = current.rsplit(", ").next().unwrap_or("MDY");
    let parts = value.split(|c: char| c == ',' || c.is_whitespace());
    for part in parts.filter(|p| !p.is_empty()) {
        order = match part.to_ascii_lowercase().as_str() {
            "iso" => order,
            "mdy" | "us" | "noneuropean" => "MDY",
            "dmy" | "european" | "euro" => "DMY",
            "ymd" => "YMD",
            "sql" | "postgres" | "german" => {
                return Err(SqlError::new(
                    "0A000",
                    format!("DateStyle {part} is not supported: SteadyDB writes dates in ISO form"),
                ))
            }
            _ => {
                return Err(SqlError::new(
                    "22023",
                    format!("invalid value for parameter \"DateStyle\": \"{value}\""),
                ))
            }
        };
    }
    Ok(format!("ISO, {order}"))
}

fn normalize(key: &str, value: &str) -> Result<String> {
    let invalid = || {
        SqlError::new(
            "22023",
            format!("invalid value for parameter \"{key}\": \"{value}\""),
        )
    };
    let lower = value.trim().to_lowercase();
    Ok(match key {
        "timezone" => steady_types::zone::Zone::named(value)
            .ok_or_else(|| {
                invalid().with_detail(
                    "SteadyDB takes IANA time zone names (Europe/Berlin) and UTC, not offsets.",
                )
            })?
            .name()
            .to_owned(),
        _ if TIMEOUTS.contains(&key) => parse_duration(&lower).ok_or_else(invalid)?.to_string(),
        "log_min_duration_statement" if lower == "-1" => lower,
        "log_min_duration_statement" => parse_duration(&lower).ok_or_else(invalid)?.to_string(),
        "max_parallel_workers_per_gather" => match lower.parse::<u16>() {
            Ok(workers) if workers <= 1024 => workers.to_string(),
            _ => return Err(invalid()),
        },
        "client_min_messages" => {
            const LEVELS: &[&str] = &[
                "debug5", "debug4", "debug3", "debug2", "debug1", "debug", "log", "notice",
                "warning", "error",
            ];
            LEVELS
                .iter()
                .find(|l| **l == lower)
                .ok_or_else(invalid)?
                .to_string()
        }
        "default_transaction_isolation" => {
            const LEVELS: &[&str] = &[
                "read uncommitted",
                "read committed",
                "repeatable read",
                "serializable",
            ];
            LEVELS
                .iter()
                .find(|l| **l == lower)
                .ok_or_else(invalid)?
                .to_string()
        }
        "client_encoding" => match lower.replace(['-', '_'], "").as_str() {
            "utf8" | "unicode" => "UTF8".to_owned(),
            _ => {
                return Err(SqlError::new(
                    "22023",
                    format!("invalid value for parameter \"client_encoding\": \"{value}\""),
                ))
            }
        },
        // No row-level security policies, function bodies or synchronized scans exist, so each
        // value of these is honoured as PostgreSQL honours it where there are none.
        "standard_conforming_strings"
        | "synchronous_commit"
        | "default_transaction_read_only"
        | "check_function_bodies"
        | "row_security"
        | "synchronize_seqscans" => match lower.as_str() {
            "on" | "true" | "yes" | "1" => "on".to_owned(),
            "off" | "false" | "no" | "0" => "off".to_owned(),
            _ if key == "synchronous_commit"
                && matches!(lower.as_str(), "local" | "remote_write" | "remote_apply") =>
            {
                lower
            }
            _ => return Err(invalid()),
        },
        "xmloption" => match lower.as_str() {
            "content" | "document" => lower,
            _ => return Err(invalid()),
        },
        "default_tablespace" => match lower.as_str() {
            "" | "pg_default" => lower,
            _ => {
                return Err(invalid().with_detail(format!("Tablespace \"{value}\" does not exist.")))
            }
        },
        "default_table_access_method" => match lower.as_str() {
            "heap" => lower,
            _ => {
                return Err(invalid()
                    .with_detail(format!("Table access method \"{value}\" does not exist.")))
            }
        },
        _ => value.to_owned(),
    })
}

/// Milliseconds of a duration setting: a plain number is milliseconds; units ms, s, min, h, d.
fn parse_duration(text: &str) -> Option<u64> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let factor = match unit.trim() {
        "" | "ms" => 1,
        "s" => 1_000,
        "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    number.checked_mul(factor)
}

/// PostgreSQL's display of a millisecond setting: the largest unit that divides it.
fn show_duration(ms: u64) -> String {
    if ms == 0 {
        return "0".to_owned();
    }
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("min", 60_000),
        ("s", 1_000),
    ] {
        if ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}
