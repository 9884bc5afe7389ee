//! Value text forms, casts and comparisons against PostgreSQL 15's answers.

use proptest::prelude::*;

use std::cmp::Ordering;
use std::str::FromStr;

use rust_decimal::Decimal;

use crate::*;

fn text(v: Value) -> String {
    v.to_string()
}

fn err(result: Result<Value, TypeError>) -> (String, &'static str) {
    let e = result.expect_err("expected an error");
    (e.to_string(), e.sqlstate())
}

fn dec(s: &str) -> Decimal {
    Decimal::from_str(s).expect("decimal literal")
}

#[test]
fn double_output_matches_postgres() {
    let cases = [
        (0.1, "0.1"),
        (1.0 / 3.0, "0.3333333333333333"),
        (1e15, "1e+15"),
        (1e14, "100000000000000"),
        (123456789012345.0, "123456789012345"),
        (1e-5, "1e-05"),
        (0.0001, "0.0001"),
        (1.5e300, "1.5e+300"),
        (-2.5e-300, "-2.5e-300"),
        (0.0, "0"),
        (-0.0, "-0"),
        (f64::NAN, "NaN"),
        (f64::INFINITY, "Infinity"),
        (f64::NEG_INFINITY, "-Infinity"),
    ];
    for (v, want) in cases {
        assert_eq!(text(Value::Double(v)), want, "{v:e}");
    }
}

#[test]
fn real_output_matches_postgres() {
    let cases = [
        (0.1f32, "0.1"),
        (100000.0, "100000"),
        (1e6, "1e+06"),
        (1234567.0, "1.234567e+06"),
        (3.4028235e38, "3.4028235e+38"),
    ];
    for (v, want) in cases {
        assert_eq!(text(Value::Real(v)), want);
    }
}

#[test]
fn other_outputs_match_postgres() {
    assert_eq!(text(Value::Boolean(true)), "t");
    assert_eq!(text(Value::Bytea(vec![0, 0xab, 0xff])), "\\x00abff");
    assert_eq!(text(Value::Numeric(dec("1.50"))), "1.50");
    assert_eq!(text(Value::Date(0)), "2000-01-01");
    assert_eq!(text(Value::Date(-1)), "1999-12-31");
    assert_eq!(text(Value::Date(i32::MAX)), "infinity");
    assert_eq!(text(Value::Timestamp(1_500_000)), "2000-01-01 00:00:01.5");
    assert_eq!(text(Value::Timestamp(-1)), "1999-12-31 23:59:59.999999");
    assert_eq!(Value::Null.to_pg_text(), None);
}

#[test]
fn dates_round_trip_through_text() {
    for s in [
        "2024-02-29",
        "0001-01-01",
        "0001-12-31 BC",
        "4714-11-24 BC",
        "5874897-12-31",
    ] {
        let v = Value::parse(&DataType::Date, s).expect(s);
        assert_eq!(text(v), s);
    }
    let ts = "2020-01-02 03:04:05.123456";
    assert_eq!(text(Value::parse(&DataType::Timestamp, ts).expect(ts)), ts);
    let t = Value::parse(&DataType::Timestamp, " 2020-01-02T03:04:05 ").expect("iso");
    assert_eq!(text(t), "2020-01-02 03:04:05");
    let d = Value::parse(&DataType::Date, "2020-01-02 10:00").expect("date with time");
    assert_eq!(text(d), "2020-01-02");
    assert_eq!(
        Value::parse(&DataType::Date, "epoch"),
        Ok(Value::Date(-10_957))
    );
}

/// `now`, `today`, `tomorrow` and `yesterday` read the statement's time, in the session zone:
/// at 2024-03-01 23:30 UTC it is already the 2nd in Tokyo.
#[test]
fn relative_date_words_read_the_statement_time_in_the_session_zone() {
    use crate::zone::{set_session_zone, set_transaction_time, Zone};
    let at = Value::parse(&DataType::TimestampTz, "2024-03-01 23:30:00+00").unwrap();
    let Value::TimestampTz(micros) = at else {
        panic!("{at:?}")
    };
    set_transaction_time(micros);
    set_session_zone(&Zone::utc());
    let parse = |ty: &DataType, s: &str| text(Value::parse(ty, s).expect(s));
    assert_eq!(parse(&DataType::Timestamp, "now"), "2024-03-01 23:30:00");
    assert_eq!(parse(&DataType::Date, " Today "), "2024-03-01");
    assert_eq!(parse(&DataType::Date, "tomorrow"), "2024-03-02");
    assert_eq!(
        parse(&DataType::Timestamp, "yesterday"),
        "2024-02-29 00:00:00"
    );
    assert_eq!(Value::parse(&DataType::TimestampTz, "now"), Ok(at.clone()));
    set_session_zone(&Zone::named("Asia/Tokyo").expect("the system's zone database"));
    assert_eq!(parse(&DataType::Date, "today"), "2024-03-02");
    assert_eq!(
        parse(&DataType::TimestampTz, "today"),
        "2024-03-02 00:00:00+09"
    );
    assert_eq!(Value::parse(&DataType::TimestampTz, "now"), Ok(at));
    set_session_zone(&Zone::utc());
}

#[test]
fn date_errors_match_postgres() {
    let bad = err(Value::parse(&DataType::Date, "2001-02-29"));
    assert_eq!(
        bad,
        (
            "date/time field value out of range: \"2001-02-29\"".into(),
            "22008"
        )
    );
    let bad = err(Value::parse(&DataType::Date, "yesterday-ish"));
    assert_eq!(
        bad,
        (
            "invalid input syntax for type date: \"yesterday-ish\"".into(),
            "22007"
        )
    );
    let bad = err(Value::parse(&DataType::Timestamp, "300000-01-01"));
    assert_eq!(
        bad,
        ("timestamp out of range: \"300000-01-01\"".into(), "22008")
    );
}

#[test]
fn booleans_accept_postgres_spellings() {
    for s in ["t", "TRUE", " yes ", "on", "1", "tr", "y"] {
        assert_eq!(
            Value::parse(&DataType::Boolean, s),
            Ok(Value::Boolean(true)),
            "{s}"
        );
    }
    for s in ["f", "False", "no", "OFF", "0", "of"] {
        assert_eq!(
            Value::parse(&DataType::Boolean, s),
            Ok(Value::Boolean(false)),
            "{s}"
        );
    }
    let bad = err(Value::parse(&DataType::Boolean, "o"));
    assert_eq!(
        bad,
        (
            "invalid input syntax for type boolean: \"o\"".into(),
            "22P02"
        )
    );
}

#[test]
fn integer_input_matches_postgres() {
    assert_eq!(
        Value::parse(&DataType::Integer, "  -42 "),
        Ok(Value::Integer(-42))
    );
    assert_eq!(Value::parse(&DataType::BigInt, "+7"), Ok(Value::BigInt(7)));
    let bad = err(Value::parse(&DataType::Integer, "abc"));
    assert_eq!(
        bad,
        (
            "invalid input syntax for type integer: \"abc\"".into(),
            "22P02"
        )
    );
    let bad = err(Value::parse(&DataType::SmallInt, "99999"));
    assert_eq!(
        bad,
        (
            "value \"99999\" is out of range for type smallint".into(),
            "22003"
        )
    );
    let bad = err(Value::parse(&DataType::BigInt, "99999999999999999999"));
    assert_eq!(bad.1, "22003");
}

#[test]
fn float_and_numeric_input_match_postgres() {
    let inf = Value::parse(&DataType::Double, " -Infinity ");
    assert_eq!(inf, Ok(Value::Double(f64::NEG_INFINITY)));
    assert!(matches!(Value::parse(&DataType::Real, "NaN"), Ok(Value::Real(x)) if x.is_nan()));
    let bad = err(Value::parse(&DataType::Double, "1e400"));
    assert_eq!(
        bad,
        (
            "\"1e400\" is out of range for type double precision".into(),
            "22003"
        )
    );
    assert_eq!(err(Value::parse(&DataType::Real, "1e-50")).1, "22003");
    let unconstrained = DataType::Numeric {
        precision: None,
        scale: None,
    };
    let n = Value::parse(&unconstrained, "1.50e1").expect("numeric");
    assert_eq!(text(n), "15.0");
    assert_eq!(
        text(Value::parse(&unconstrained, "-0.00").expect("zero")),
        "0.00"
    );
    let bad = err(Value::parse(&unconstrained, "1.2.3"));
    assert_eq!(
        bad,
        (
            "invalid input syntax for type numeric: \"1.2.3\"".into(),
            "22P02"
        )
    );
    assert_eq!(err(Value::parse(&unconstrained, "NaN")).1, "0A000");
}

#[test]
fn bytea_input_matches_postgres() {
    assert_eq!(
        Value::parse(&DataType::Bytea, "\\x0aFF"),
        Ok(Value::Bytea(vec![10, 255]))
    );
    assert_eq!(
        Value::parse(&DataType::Bytea, "a\\\\b\\001"),
        Ok(Value::Bytea(b"a\\b\x01".to_vec()))
    );
    let bad = err(Value::parse(&DataType::Bytea, "\\xabc"));
    assert_eq!(
        bad,
        (
            "invalid hexadecimal data: odd number of digits".into(),
            "22023"
        )
    );
    let bad = err(Value::parse(&DataType::Bytea, "\\xzz"));
    assert_eq!(bad, ("invalid hexadecimal digit: \"z\"".into(), "22023"));
    assert_eq!(err(Value::parse(&DataType::Bytea, "\\9")).1, "22P02");
}

#[test]
fn integer_casts_check_range() {
    let bad = err(Value::BigInt(100_000).cast_to(&DataType::SmallInt));
    assert_eq!(bad, ("smallint out of range".into(), "22003"));
    let bad = err(Value::Double(3e9).cast_to(&DataType::Integer));
    assert_eq!(bad, ("integer out of range".into(), "22003"));
    let bad = err(Value::Numeric(dec("1e19")).cast_to(&DataType::BigInt));
    assert_eq!(bad, ("bigint out of range".into(), "22003"));
    let bad = err(Value::Text("abc".into()).cast_to(&DataType::Integer));
    assert_eq!(
        bad,
        (
            "invalid input syntax for type integer: \"abc\"".into(),
            "22P02"
        )
    );
}

#[test]
fn casts_round_like_postgres() {
    let int = DataType::Integer;
    assert_eq!(Value::Double(2.5).cast_to(&int), Ok(Value::Integer(2)));
    assert_eq!(Value::Double(3.5).cast_to(&int), Ok(Value::Integer(4)));
    assert_eq!(
        Value::Numeric(dec("2.5")).cast_to(&int),
        Ok(Value::Integer(3))
    );
    assert_eq!(
        Value::Numeric(dec("-2.5")).cast_to(&int),
        Ok(Value::Integer(-3))
    );
    let numeric = DataType::Numeric {
        precision: None,
        scale: None,
    };
    let third = Value::Double(1.0 / 3.0).cast_to(&numeric).expect("numeric");
    assert_eq!(text(third), "0.333333333333333");
    assert_eq!(
        text(Value::Real(0.1).cast_to(&numeric).expect("numeric")),
        "0.1"
    );
    assert_eq!(err(Value::Double(f64::NAN).cast_to(&numeric)).1, "0A000");
    assert_eq!(
        Value::Boolean(true).cast_to(&DataType::Text),
        Ok(Value::Text("true".into()))
    );
}

#[test]
fn numeric_typmod_rounds_and_checks_precision() {
    let ty = DataType::Numeric {
        precision: Some(5),
        scale: Some(2),
    };
    assert_eq!(
        text(Value::Numeric(dec("123.456")).cast_to(&ty).expect("fits")),
        "123.46"
    );
    assert_eq!(
        text(Value::Integer(7).assign_to(&ty).expect("fits")),
        "7.00"
    );
    assert_eq!(
        text(Value::Numeric(dec("-0.001")).cast_to(&ty).expect("fits")),
        "0.00"
    );
    let e = Value::Numeric(dec("999.995"))
        .cast_to(&ty)
        .expect_err("overflow");
    assert_eq!(
        (e.to_string(), e.sqlstate()),
        ("numeric field overflow".into(), "22003")
    );
    assert_eq!(
        e.detail().as_deref(),
        Some("A field with precision 5, scale 2 must round to an absolute value less than 10^3.")
    );
}

#[test]
fn string_lengths_follow_cast_context() {
    let varchar5 = DataType::Varchar(Some(5));
    let long = Value::Text("abcdefg".into());
    assert_eq!(long.cast_to(&varchar5), Ok(Value::Text("abcde".into())));
    let bad = err(long.assign_to(&varchar5));
    assert_eq!(
        bad,
        (
            "value too long for type character varying(5)".into(),
            "22001"
        )
    );
    let spaces = Value::Text("abc    ".into());
    assert_eq!(spaces.assign_to(&varchar5), Ok(Value::Text("abc  ".into())));
    assert_eq!(
        Value::Text("ab".into()).assign_to(&DataType::Char(4)),
        Ok(Value::Text("ab  ".into()))
    );
    let bad = err(Value::parse(&DataType::Char(2), "héllo"));
    assert_eq!(
        bad,
        ("value too long for type character(2)".into(), "22001")
    );
    assert_eq!(
        Value::Text("héllo".into()).cast_to(&DataType::Char(2)),
        Ok(Value::Text("hé".into()))
    );
    // Padding counts characters, not bytes, and goes beyond one chunk of spaces.
    let padded = Value::Text("é".into()).assign_to(&DataType::Char(150));
    assert_eq!(padded, Ok(Value::Text(format!("é{}", " ".repeat(149)))));
    let within_bytes = Value::Text("éé".into()).assign_to(&DataType::Char(3));
    assert_eq!(within_bytes, Ok(Value::Text("éé ".into())));
}

#[test]
fn impossible_casts_are_refused() {
    let bad = err(Value::Boolean(true).cast_to(&DataType::Date));
    assert_eq!(bad, ("cannot cast type boolean to date".into(), "42846"));
    let bad = err(Value::Boolean(true).cast_to(&DataType::BigInt));
    assert_eq!(bad, ("cannot cast type boolean to bigint".into(), "42846"));
    assert_eq!(Value::Null.cast_to(&DataType::Date), Ok(Value::Null));
}

#[test]
fn date_and_timestamp_casts() {
    let ts = Value::parse(&DataType::Timestamp, "1999-12-31 23:00").expect("ts");
    assert_eq!(ts.cast_to(&DataType::Date), Ok(Value::Date(-1)));
    assert_eq!(
        Value::Date(1).cast_to(&DataType::Timestamp),
        Ok(Value::Timestamp(USECS_PER_DAY))
    );
    let far = Value::parse(&DataType::Date, "5000000-01-01").expect("date");
    assert_eq!(err(far.cast_to(&DataType::Timestamp)).1, "22008");
    assert_eq!(
        text(ts.cast_to(&DataType::Text).expect("text")),
        "1999-12-31 23:00:00"
    );
}

#[test]
fn comparison_follows_sql() {
    use Ordering::*;
    let num = |s| Value::Numeric(dec(s));
    assert_eq!(Value::Integer(1).compare(&Value::Double(1.0)), Some(Equal));
    assert_eq!(Value::BigInt(2).compare(&num("1.5")), Some(Greater));
    assert_eq!(Value::SmallInt(-1).compare(&Value::BigInt(0)), Some(Less));
    assert_eq!(
        Value::Double(f64::NAN).compare(&Value::Double(f64::INFINITY)),
        Some(Greater)
    );
    assert_eq!(
        Value::Double(-0.0).compare(&Value::Double(0.0)),
        Some(Equal)
    );
    assert_eq!(
        Value::Date(1).compare(&Value::Timestamp(USECS_PER_DAY)),
        Some(Equal)
    );
    assert_eq!(
        Value::Text("a".into()).compare(&Value::Text("B".into())),
        Some(Greater)
    );
    assert_eq!(Value::Null.compare(&Value::Null), None);
    assert_eq!(Value::Text("1".into()).compare(&Value::Integer(1)), None);
}

/// Every type with a value in its valid range.
fn typed_value() -> impl Strategy<Value = (DataType, Value)> {
    let numeric = DataType::Numeric {
        precision: None,
        scale: None,
    };
    let mantissa = -(1i128 << 96) + 1..1i128 << 96;
    prop_oneof![
        any::<bool>().prop_map(|b| (DataType::Boolean, Value::Boolean(b))),
        any::<i16>().prop_map(|i| (DataType::SmallInt, Value::SmallInt(i))),
        any::<i32>().prop_map(|i| (DataType::Integer, Value::Integer(i))),
        any::<i64>().prop_map(|i| (DataType::BigInt, Value::BigInt(i))),
        any::<f32>().prop_map(|x| (DataType::Real, Value::Real(x))),
        any::<f64>().prop_map(|x| (DataType::Double, Value::Double(x))),
        (mantissa, 0u32..=28).prop_map(move |(m, s)| {
            (numeric, Value::Numeric(Decimal::from_i128_with_scale(m, s)))
        }),
        any::<String>().prop_map(|s| (DataType::Text, Value::Text(s))),
        any::<Vec<u8>>().prop_map(|b| (DataType::Bytea, Value::Bytea(b))),
        DATE_RANGE.prop_map(|d| (DataType::Date, Value::Date(d as i32))),
        (TIMESTAMP_RANGE.start as i64..TIMESTAMP_RANGE.end as i64)
            .prop_map(|t| (DataType::Timestamp, Value::Timestamp(t))),
    ]
}

proptest! {
    #[test]
    fn text_output_reads_back((ty, value) in typed_value()) {
        let text = value.to_string();
        let parsed = Value::parse(&ty, &text);
        let reads_back = |p: &Value| *p == value || p.to_string() == "NaN";
        prop_assert!(parsed.as_ref().is_ok_and(reads_back), "{text} -> {parsed:?}");
    }
}

#[test]
fn uuids_read_every_postgres_form_and_write_the_canonical_one() {
    let canonical = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
    for form in [
        canonical,
        "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
        "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
        "a0eebc999c0b4ef8bb6d6bb9bd380a11",
        "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
        "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
    ] {
        assert_eq!(
            text(Value::parse(&DataType::Uuid, form).unwrap()),
            canonical
        );
    }
    for bad in [
        "",
        "x",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
        "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
        "a0eeb-c99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
        "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
        " a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
    ] {
        let message = format!("invalid input syntax for type uuid: \"{bad}\"");
        assert_eq!(
            err(Value::parse(&DataType::Uuid, bad)),
            (message, "22P02"),
            "{bad:?}"
        );
    }
}

#[test]
fn uuids_order_by_their_bytes_and_cast_only_from_text() {
    let low = Value::parse(&DataType::Uuid, "00000000-0000-0000-0000-0000000000ff").unwrap();
    let high = Value::parse(&DataType::Uuid, "ff000000-0000-0000-0000-000000000000").unwrap();
    assert_eq!(low.compare(&high), Some(std::cmp::Ordering::Less));
    assert_eq!(
        high.cast_to(&DataType::Text).unwrap(),
        Value::Text(high.to_string())
    );
    assert_eq!(
        err(Value::Integer(1).cast_to(&DataType::Uuid)),
        ("cannot cast type integer to uuid".to_owned(), "42846")
    );
    let random = crate::random_uuid([0xff; 16]);
    assert_eq!(
        text(Value::Uuid(random)),
        "ffffffff-ffff-4fff-bfff-ffffffffffff",
        "version 4, variant 10"
    );
}

#[test]
fn intervals_read_postgres_forms_and_write_the_postgres_style() {
    let cases = [
        ("1 day", "1 day"),
        (
            "1 year 2 months 3 days 04:05:06.5",
            "1 year 2 mons 3 days 04:05:06.5",
        ),
        ("-1 day +02:00:00", "-1 days +02:00:00"),
        ("1.5 days", "1 day 12:00:00"),
        ("1.5 months", "1 mon 15 days"),
        ("10", "00:00:10"),
        ("@ 2 hours ago", "-02:00:00"),
        ("P1Y2M3DT4H5M6S", "1 year 2 mons 3 days 04:05:06"),
        ("-1 years -2 mons", "-1 years -2 mons"),
        ("0", "00:00:00"),
        ("100 us", "00:00:00.0001"),
    ];
    for (input, output) in cases {
        let value = Value::parse(&DataType::Interval, input).unwrap();
        assert_eq!(text(value.clone()), output, "{input}");
        assert_eq!(
            Value::parse(&DataType::Interval, output).unwrap(),
            value,
            "{output}"
        );
    }
    for bad in ["", "abc", "1 fortnight", "1:2:3:4", "P", "PT1X"] {
        let (message, code) = err(Value::parse(&DataType::Interval, bad));
        assert_eq!(code, "22007", "{bad:?}: {message}");
    }
}

#[test]
fn intervals_compare_by_span_and_add_months_on_the_calendar() {
    let parse = |s: &str| match Value::parse(&DataType::Interval, s).unwrap() {
        Value::Interval(i) => i,
        other => panic!("{other:?}"),
    };
    assert_eq!(parse("1 mon").compare(&parse("30 days")), Ordering::Equal);
    assert_eq!(parse("1 day").compare(&parse("25 hours")), Ordering::Less);
    let stamp = |s: &str| match Value::parse(&DataType::Timestamp, s).unwrap() {
        Value::Timestamp(t) => t,
        other => panic!("{other:?}"),
    };
    let month_end = parse("1 mon")
        .add_to_timestamp(stamp("2024-01-31 10:00"))
        .unwrap();
    assert_eq!(text(Value::Timestamp(month_end)), "2024-02-29 10:00:00");
    let back = parse("-1 year")
        .add_to_timestamp(stamp("2024-02-29"))
        .unwrap();
    assert_eq!(text(Value::Timestamp(back)), "2023-02-28 00:00:00");
    let between = Interval::between(stamp("2024-03-01 12:00"), stamp("2024-02-28")).unwrap();
    assert_eq!(text(Value::Interval(between)), "2 days 12:00:00");
}

#[test]
fn timestamptz_reads_zones_and_writes_in_the_session_zone() {
    use crate::zone::{set_session_zone, Zone};
    let york = Zone::named("america/new_york").expect("the system's zone database");
    assert_eq!(york.name(), "America/New_York");
    assert!(Zone::named("+02:00").is_none() && Zone::named("Mars/Olympus").is_none());
    set_session_zone(&york);
    let read = |s: &str| Value::parse(&DataType::TimestampTz, s).unwrap();
    // A fall-back fold takes standard time, a spring-forward gap the offset before it.
    assert_eq!(text(read("2024-11-03 01:30")), "2024-11-03 01:30:00-05");
    assert_eq!(text(read("2024-03-10 02:30")), "2024-03-10 03:30:00-04");
    assert_eq!(read("2024-07-01 08:00"), read("2024-07-01 12:00Z"));
    assert_eq!(
        read("2024-07-01 14:00 Europe/Berlin"),
        read("2024-07-01T12:00:00+00")
    );
    assert_eq!(
        text(read("2024-01-01 10:00+05:30")),
        "2023-12-31 23:30:00-05"
    );
    let (message, code) = err(Value::parse(
        &DataType::TimestampTz,
        "2024-01-01 Mars/Olympus",
    ));
    assert_eq!(
        (message.as_str(), code),
        ("time zone \"Mars/Olympus\" not recognized", "22023")
    );
    // East of UTC the infinities must not overflow into a finite time.
    let kolkata = Zone::named("Asia/Kolkata").unwrap();
    assert_eq!(kolkata.to_local(i64::MAX), i64::MAX);
    assert_eq!(kolkata.to_utc(i64::MIN), i64::MIN);
    set_session_zone(&kolkata);
    let infinity = read("infinity").cast_to(&DataType::Timestamp).unwrap();
    assert_eq!(text(infinity), "infinity");
    set_session_zone(&Zone::utc());
    assert_eq!(text(read("2024-07-01 08:00-04")), "2024-07-01 12:00:00+00");
}
