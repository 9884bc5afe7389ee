//! Catalog functions (`pg_get_indexdef`, `format_type`, `pg_table_is_visible`...), the `reg*`
//! conversions between names and oids, the array functions of [`super::arrays`] and the regular
//! expression operators (`~`, `~*`, `!~`, `!~*`), all found by the binder when the built-in
//! registry ([`crate::execution::functions`]) has no such name.
//!
//! Functions that read the engine or the session are volatile, so the binder never folds them:
//! constant folding runs without a session. Regular expressions use the `regex` crate, whose
//! syntax covers the POSIX EREs clients send (`^(accounts)$`, `^pg_toast`).

use steady_types::{DataType, Value};

use super::arrays::{self, int_arg};
use super::model::{self, Relation};
use super::pg_type::{format_type, type_by_name};
use super::relations::{column_list, constraint_definition, index_definition};
use super::{oids, sizes};
use crate::error::{Result, SqlError};
use crate::execution::executor::ExecCtx;
use crate::execution::functions::Function;
use crate::execution::regex::{regex_flags, regexp_split, with_regex};
use crate::types::ops::text_of;

use crate::execution::functions::{
    bigint, boolean, contextual as catalog, integer, strict as pure, text,
};

/// Sees NULL arguments.
const fn lenient(mut function: Function) -> Function {
    function.strict = false;
    function
}

fn oid_type(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::BigInt)
}
fn unknown(_: &[Option<DataType>]) -> Option<DataType> {
    None
}

pub static REGEX_MATCH: Function = pure("textregexeq", (2, 2), boolean, regex_match);
pub static REGEX_NOT_MATCH: Function = pure("textregexne", (2, 2), boolean, regex_not_match);
pub static REGEX_IMATCH: Function = pure("texticregexeq", (2, 2), boolean, regex_imatch);
pub static REGEX_NOT_IMATCH: Function = pure("texticregexne", (2, 2), boolean, regex_not_imatch);
fn text_array(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::TextArray)
}

/// `substring(string FROM pattern)` with a text pattern.
pub static SUBSTRING_REGEX: Function = pure("substring", (2, 2), text, substring_regex);
pub static REGCLASS_IN: Function = catalog("regclassin", (1, 1), oid_type, regclass_in);
pub static REGCLASS_OUT: Function = catalog("regclassout", (1, 1), text, regclass_out);
pub static REGTYPE_IN: Function = pure("regtypein", (1, 1), oid_type, regtype_in);
pub static REGTYPE_OUT: Function = pure("regtypeout", (1, 1), text, regtype_out);
pub static REGNAMESPACE_IN: Function = pure("regnamespacein", (1, 1), oid_type, regnamespace_in);
pub static REGNAMESPACE_OUT: Function = pure("regnamespaceout", (1, 1), text, regnamespace_out);
pub static SUBSCRIPT: Function = pure("array_subscript", (2, 2), unknown, arrays::subscript);
pub static SLICE: Function = pure("array_slice", (3, 3), first_argument_type, arrays::slice);
pub static ARRAY_ELEMENT_TEXT: Function = lenient(pure(
    "array_element_text",
    (1, 1),
    text,
    arrays::array_element_text,
));
pub static ARRAY_OF: Function = lenient(pure(
    "array_constructor",
    (0, 10_000),
    text,
    arrays::array_of,
));
pub static ARRAY_CAT: Function = lenient(pure("array_cat", (2, 2), text, arrays::array_cat));
pub static ARRAY_FROM_ELEMENTS: Function = lenient(pure(
    "array_from_elements",
    (1, 1),
    text,
    arrays::array_from_elements,
));

static FUNCTIONS: &[&Function] = &[
    &REGEX_MATCH,
    &REGEX_NOT_MATCH,
    &REGEX_IMATCH,
    &REGEX_NOT_IMATCH,
    &REGCLASS_IN,
    &REGCLASS_OUT,
    &REGTYPE_IN,
    &REGTYPE_OUT,
    &REGNAMESPACE_IN,
    &REGNAMESPACE_OUT,
    &catalog("to_regclass", (1, 1), oid_type, to_regclass),
    &catalog("pg_get_viewdef", (1, 2), text, super::views::get_viewdef),
    &pure("regexp_replace", (3, 4), text, regexp_replace),
    &pure(
        "regexp_split_to_array",
        (2, 3),
        text_array,
        regexp_split_to_array,
    ),
    &catalog(
        "pg_cancel_backend",
        (1, 1),
        boolean,
        super::activity::cancel_backend,
    ),
    &catalog(
        "pg_terminate_backend",
        (1, 2),
        boolean,
        super::activity::terminate_backend,
    ),
    &pure("to_regtype", (1, 1), oid_type, to_regtype),
    &pure("to_regnamespace", (1, 1), oid_type, to_regnamespace),
    &catalog("pg_get_userbyid", (1, 1), text, get_userbyid),
    &pure("pg_table_is_visible", (1, 1), boolean, table_is_visible),
    &pure("pg_type_is_visible", (1, 1), boolean, always),
    &pure("pg_collation_is_visible", (1, 1), boolean, always),
    &pure("pg_function_is_visible", (1, 1), boolean, always),
    &pure("pg_operator_is_visible", (1, 1), boolean, always),
    &pure("pg_opclass_is_visible", (1, 1), boolean, always),
    &pure("pg_opfamily_is_visible", (1, 1), boolean, always),
    &pure("pg_conversion_is_visible", (1, 1), boolean, always),
    &pure("pg_statistics_obj_is_visible", (1, 1), boolean, always),
    &pure("pg_ts_config_is_visible", (1, 1), boolean, always),
    &pure("pg_ts_dict_is_visible", (1, 1), boolean, always),
    &pure("pg_ts_parser_is_visible", (1, 1), boolean, always),
    &pure("pg_ts_template_is_visible", (1, 1), boolean, always),
    &lenient(pure("format_type", (2, 2), text, format_type_fn)),
    &catalog("pg_get_indexdef", (1, 3), text, get_indexdef),
    &catalog("pg_get_constraintdef", (1, 2), text, get_constraintdef),
    &pure("pg_get_expr", (2, 3), text, get_expr),
    &pure("pg_encoding_to_char", (1, 1), text, encoding_to_char),
    &catalog(
        "pg_relation_is_publishable",
        (1, 1),
        boolean,
        is_publishable,
    ),
    &pure("pg_partition_ancestors", (1, 1), oid_type, itself),
    &pure("obj_description", (1, 2), text, obj_description),
    &pure("col_description", (2, 2), text, nothing),
    &pure("shobj_description", (2, 2), text, nothing),
    &pure("pg_get_statisticsobjdef_columns", (1, 1), text, nothing),
    &pure("pg_get_triggerdef", (1, 2), text, nothing),
    // pg_proc lists no functions (SteadyDB has no functions of users): an oid is never one.
    &pure("pg_get_function_result", (1, 1), text, nothing),
    &pure("pg_get_function_arguments", (1, 1), text, nothing),
    &pure("pg_get_function_identity_arguments", (1, 1), text, nothing),
    &pure("pg_get_functiondef", (1, 1), text, nothing),
    &pure("pg_get_function_sqlbody", (1, 1), text, nothing),
    &pure("pg_get_partkeydef", (1, 1), text, nothing),
    &catalog(
        "has_schema_privilege",
        (2, 3),
        boolean,
        has_schema_privilege,
    ),
    &catalog(
        "has_database_privilege",
        (2, 3),
        boolean,
        has_schema_privilege,
    ),
    &catalog(
        "has_column_privilege",
        (3, 4),
        boolean,
        has_column_privilege,
    ),
    &pure("array_to_string", (2, 3), text, arrays::array_to_string),
    &pure("array_upper", (2, 2), integer, arrays::array_upper),
    &pure("array_lower", (2, 2), integer, arrays::array_lower),
    &pure("array_length", (2, 2), integer, arrays::array_length),
    &pure("cardinality", (1, 1), integer, arrays::cardinality),
    &pure("array_dims", (1, 1), text, arrays::array_dims),
    &lenient(pure(
        "array_position",
        (2, 2),
        integer,
        arrays::array_position,
    )),
    &pure("current_schemas", (1, 1), text, arrays::current_schemas),
    &catalog("pg_relation_size", (1, 2), bigint, sizes::relation_size),
    &catalog("pg_table_size", (1, 1), bigint, sizes::table_size),
    &catalog("pg_indexes_size", (1, 1), bigint, sizes::indexes_size),
    &catalog(
        "pg_total_relation_size",
        (1, 1),
        bigint,
        sizes::total_relation_size,
    ),
    &pure("pg_size_pretty", (1, 1), text, sizes::size_pretty),
    &catalog("pg_database_size", (1, 1), bigint, sizes::database_size),
    &catalog("pg_tablespace_size", (1, 1), bigint, sizes::tablespace_size),
    &pure(
        "pg_tablespace_location",
        (1, 1),
        text,
        sizes::tablespace_location,
    ),
    // One role, a superuser, holds every role's rights (roles of their own: issue 17).
    &pure("pg_has_role", (2, 3), boolean, always),
    &pure("pg_is_in_recovery", (0, 0), boolean, never),
    &catalog("steady_backup", (1, 1), text, backup),
    &catalog("has_table_privilege", (2, 3), boolean, has_table_privilege),
    &catalog(
        "pg_stat_statements_reset",
        (0, 0),
        text,
        super::statements::reset,
    ),
    &lenient(catalog("set_config", (3, 3), text, set_config)),
    &catalog("acldefault", (2, 2), text, acldefault),
    &lenient(pure(
        "array_cat",
        (2, 2),
        first_argument_type,
        arrays::array_cat,
    )),
    &lenient(pure(
        "array_append",
        (2, 2),
        first_argument_type,
        arrays::array_append,
    )),
    &lenient(pure(
        "array_prepend",
        (2, 2),
        second_argument_type,
        arrays::array_prepend,
    )),
    &lenient(pure(
        "array_remove",
        (2, 2),
        first_argument_type,
        arrays::array_remove,
    )),
    &lenient(pure(
        "array_replace",
        (3, 3),
        first_argument_type,
        arrays::array_replace,
    )),
    &pure("array_ndims", (1, 1), integer, arrays::array_ndims),
];

fn first_argument_type(args: &[Option<DataType>]) -> Option<DataType> {
    args.first().copied().flatten()
}

fn second_argument_type(args: &[Option<DataType>]) -> Option<DataType> {
    args.get(1).copied().flatten()
}

/// The catalog function `name` taking `args` arguments (the binder calls [`arrays::ARRAY_QUANTIFIED`],
/// [`SUBSCRIPT`] and the array builders itself; they have no SQL name).
pub fn lookup(name: &str, args: usize) -> Option<&'static Function> {
    FUNCTIONS
        .iter()
        .copied()
        .find(|f| f.name == name && (f.min_args..=f.max_args).contains(&args))
}

fn always(_: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Boolean(true))
}

/// `obj_description(oid [, catalog])`: the one description there is, schema `public`'s (see
/// `pg_description`).
fn obj_description(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let catalog = args.get(1).map(text_of);
    Ok(
        if oid_arg(&args[0]) == oids::PUBLIC && catalog.is_none_or(|c| c == "pg_namespace") {
            Value::Text(oids::PUBLIC_DESCRIPTION.to_owned())
        } else {
            Value::Null
        },
    )
}

/// `steady_backup(dest)`: an online physical backup of the database into directory `dest` on
/// the server's machine (new or empty), consistent as of its end; returns what it copied. The
/// copy opens (`steady serve --data dest`, `steady check dest`) as the directory would after a
/// crash at that moment.
fn backup(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    if !ctx.is_superuser()? {
        return Err(SqlError::new("42501", "must be superuser to take a backup"));
    }
    let dest = text_of(&args[0]);
    let report = ctx
        .engine()?
        .backup_to(std::path::Path::new(&dest))
        .map_err(|e| SqlError::new("58030", format!("backup into {dest} failed: {e}")))?;
    Ok(Value::Text(report.to_string()))
}

fn never(_: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Boolean(false))
}

/// `set_config(name, value, is_local)`: a session-wide change, as `SET name = value` (a NULL
/// value is the default); a transaction-local one is refused rather than made session-wide.
fn set_config(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    if args[0].is_null() {
        return Err(SqlError::new("22004", "SET requires parameter name"));
    }
    if args[2] == Value::Boolean(true) {
        return Err(SqlError::unsupported(
            "set_config(..., true): settings local to a transaction",
        ));
    }
    let value = if args[1].is_null() {
        "default".to_owned()
    } else {
        text_of(&args[1])
    };
    Ok(Value::Text(ctx.queue_setting(&text_of(&args[0]), &value)?))
}

/// `acldefault(kind, owner)`: the privileges an object of `kind` has when none were granted —
/// all of its kind's rights for its owner, and for PUBLIC those PostgreSQL gives it (`EXECUTE`
/// of functions, `USAGE` of types and languages, `CONNECT` and `TEMPORARY` of databases).
fn acldefault(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let owner = match oid_arg(&args[1]) {
        oids::SUPERUSER => model::quote_ident(&ctx.bootstrap_name()),
        oids::DATABASE_OWNER => oids::DATABASE_OWNER_NAME.to_owned(),
        other => other.to_string(),
    };
    let (own, public) = match text_of(&args[0]).as_str() {
        "r" => ("arwdDxt", ""),
        "s" => ("rwU", ""),
        "f" => ("X", "X"),
        "l" => ("U", "U"),
        "L" => ("rw", ""),
        "n" => ("UC", ""),
        "d" => ("CTc", "Tc"),
        "t" => ("C", ""),
        "F" | "S" => ("U", ""),
        "T" => ("U", "U"),
        "p" => ("sA", ""),
        other => {
            return Err(SqlError::new(
                "XX000",
                format!("unrecognized object type abbreviation: {other}"),
            ))
        }
    };
    let mut items = Vec::new();
    if !public.is_empty() {
        items.push(format!("={public}/{owner}"));
    }
    items.push(format!("{owner}={own}/{owner}"));
    Ok(Value::Text(format!("{{{}}}", items.join(","))))
}

fn nothing(_: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Null)
}

fn itself(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(args[0].clone())
}

pub(super) fn oid_arg(value: &Value) -> i64 {
    int_arg(value).unwrap_or(0)
}

fn matches(args: &[Value], case_insensitive: bool) -> Result<bool> {
    let text = text_of(&args[0]);
    with_regex(text_of(&args[1]), case_insensitive, |regex| {
        regex.is_match(&text)
    })
}

/// `substring(string FROM pattern)`: the part of `string` the POSIX regular expression matches
/// first — the part its first parenthesized group matches, when it has one — or NULL.
fn substring_regex(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let text = text_of(&args[0]);
    with_regex(text_of(&args[1]), false, |regex| {
        let captures = regex.captures(&text)?;
        let part = match regex.captures_len() {
            1 => captures.get(0),
            _ => captures.get(1),
        };
        part.map(|m| Value::Text(m.as_str().to_owned()))
    })
    .map(|part| part.unwrap_or(Value::Null))
}

/// `regexp_replace(source, pattern, replacement [, flags])`: the first match (every match with
/// flag `g`; `i` ignores case) replaced; `\1`..`\9` in the replacement are the groups and `\&` the
/// whole match, as in PostgreSQL.
fn regexp_replace(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let source = text_of(&args[0]);
    let (global, case_insensitive) = regex_flags(args.get(3))?;
    let replacement = rust_replacement(&text_of(&args[2]));
    let limit = if global { 0 } else { 1 };
    with_regex(text_of(&args[1]), case_insensitive, |regex| {
        Value::Text(
            regex
                .replacen(&source, limit, replacement.as_str())
                .into_owned(),
        )
    })
}

fn regexp_split_to_array(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let parts: Vec<Value> = regexp_split(args)?.into_iter().map(Value::Text).collect();
    Ok(Value::Text(steady_types::array::array_text(&parts)))
}

/// A PostgreSQL replacement string in the regex crate's syntax.
fn rust_replacement(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            ('\\', Some(d)) if d.is_ascii_digit() => {
                out.push_str(&format!("${{{d}}}"));
                chars.next();
            }
            ('\\', Some('&')) => {
                out.push_str("${0}");
                chars.next();
            }
            ('\\', Some('\\')) => {
                out.push('\\');
                chars.next();
            }
            ('$', _) => out.push_str("$$"),
            (c, _) => out.push(c),
        }
    }
    out
}

fn regex_match(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    matches(args, false).map(Value::Boolean)
}

fn regex_not_match(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    matches(args, false).map(|m| Value::Boolean(!m))
}

fn regex_imatch(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    matches(args, true).map(Value::Boolean)
}

fn regex_not_imatch(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    matches(args, true).map(|m| Value::Boolean(!m))
}

fn to_regclass(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let engine = ctx.engine()?;
    Ok(model::relation_by_name(engine, &text_of(&args[0]))?.map_or(Value::Null, Value::BigInt))
}

/// `has_table_privilege([role,] table, privileges)`: whether the role (the current one when not
/// given; a name or an oid) holds any of `privileges` (`'SELECT'`, `'insert, update'`...) on
/// the table or view (a name or an oid). Superusers hold every one; system views are readable
/// by every role. An unknown privilege is 22023, an unknown relation 42P01, an unknown role 42704.
fn has_table_privilege(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    use crate::execution::privileges::{allows, is_superuser, Privilege};
    let (role, table, wanted) = match args {
        [table, wanted] => (None, table, wanted),
        [role, table, wanted] => (Some(role), table, wanted),
        _ => {
            return Err(SqlError::new(
                "42883",
                "has_table_privilege takes 2 or 3 arguments",
            ))
        }
    };
    let mut privileges = Vec::new();
    for word in text_of(wanted).split(',') {
        let word = word.trim().trim_end_matches(" WITH GRANT OPTION").trim();
        let privilege = Privilege::from_keyword(word).ok_or_else(|| {
            SqlError::new("22023", format!("unrecognized privilege type: \"{word}\""))
        })?;
        privileges.push(privilege);
    }
    let role = match role {
        None => ctx.info_role(),
        Some(role) => role_of(ctx, role)?,
    };
    let engine = std::sync::Arc::clone(ctx.engine()?);
    let oid = match table {
        Value::Text(name) if name.trim().parse::<u32>().is_err() => {
            model::relation_by_name(&engine, name)?
                .ok_or_else(|| SqlError::undefined_table(name))?
        }
        other => oid_arg(other),
    };
    let grants = match model::relation(&engine, oid)? {
        Some(model::Relation::Table(t)) => engine.grants(t.id)?,
        Some(model::Relation::UserView(v)) => engine.grants(v.id)?,
        Some(_) => return Ok(Value::Boolean(true)),
        None => return Err(SqlError::undefined_table(&oid.to_string())),
    };
    let held = match role.as_deref() {
        None => true,
        Some(name) if is_superuser(&engine, Some(name))? => true,
        Some(name) => privileges.iter().any(|p| allows(&grants, name, *p)),
    };
    Ok(Value::Boolean(held))
}

/// `has_column_privilege([role,] table, column, privileges)`: the table's privilege, as SteadyDB
/// grants no privilege on single columns.
fn has_column_privilege(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let without_column: Vec<Value> = match args {
        [table, _, wanted] => vec![table.clone(), wanted.clone()],
        [role, table, _, wanted] => vec![role.clone(), table.clone(), wanted.clone()],
        _ => {
            return Err(SqlError::new(
                "42883",
                "has_column_privilege takes 3 or 4 arguments",
            ))
        }
    };
    has_table_privilege(&without_column, ctx)
}

/// `has_schema_privilege([role,] schema, privileges)` and `has_database_privilege`: as
/// PostgreSQL 15's defaults, every role may use (and connect to) them; only a superuser creates
/// in them.
fn has_schema_privilege(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let (role, wanted) = match args {
        [_, wanted] => (None, wanted),
        [role, _, wanted] => (Some(role), wanted),
        _ => return Err(SqlError::new("42883", "takes 2 or 3 arguments")),
    };
    let role = match role {
        None => ctx.info_role(),
        Some(role) => role_of(ctx, role)?,
    };
    let engine = std::sync::Arc::clone(ctx.engine()?);
    if crate::execution::privileges::is_superuser(&engine, role.as_deref())? {
        return Ok(Value::Boolean(true));
    }
    let wanted = text_of(wanted).to_ascii_uppercase();
    let everyone = ["USAGE", "CONNECT", "TEMPORARY", "TEMP"];
    Ok(Value::Boolean(
        wanted.split(',').any(|w| everyone.contains(&w.trim())),
    ))
}

/// The role a privilege function's argument names: None for the bootstrap superuser (oid 10 or
/// a name that is no role), else the role's name.
fn role_of(ctx: &mut ExecCtx, role: &Value) -> Result<Option<String>> {
    let roles = ctx.engine()?.roles()?;
    let found = match role {
        Value::Text(name) => roles.into_iter().find(|r| &r.name == name),
        other => {
            let oid = oid_arg(other);
            if oid == oids::SUPERUSER {
                return Ok(None);
            }
            let found = roles.into_iter().find(|r| oids::role(r.id) == oid);
            Some(found.ok_or_else(|| {
                SqlError::new("42704", format!("role with OID {oid} does not exist"))
            })?)
        }
    };
    match (found, role) {
        (Some(r), _) => Ok(Some(r.name)),
        (None, Value::Text(name)) if *name == ctx.bootstrap_name() => Ok(None),
        (None, _) => Err(SqlError::new(
            "42704",
            format!("role \"{}\" does not exist", text_of(role)),
        )),
    }
}

/// `'name'::regclass`; a number is the oid itself, as PostgreSQL's `regclassin` takes it (psql's
/// `\d` writes `'16401'::pg_catalog.regclass`).
fn regclass_in(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    if let Ok(oid) = text_of(&args[0]).trim().parse::<u32>() {
        return Ok(Value::BigInt(i64::from(oid)));
    }
    match to_regclass(args, ctx)? {
        Value::Null => Err(SqlError::undefined_table(&text_of(&args[0]))),
        oid => Ok(oid),
    }
}

/// A relation's name, qualified when its schema is not on the search path.
fn regclass_out(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let oid = oid_arg(&args[0]);
    Ok(Value::Text(match model::relation(ctx.engine()?, oid)? {
        Some(r) if r.namespace() == oids::INFORMATION_SCHEMA => {
            format!("information_schema.{}", model::quote_ident(r.name()))
        }
        Some(r) => model::quote_ident(r.name()),
        None => oid.to_string(),
    }))
}

fn to_regtype(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(type_by_name(&text_of(&args[0])).map_or(Value::Null, |t| Value::BigInt(t.into())))
}

fn regtype_in(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    match to_regtype(args, ctx)? {
        Value::Null => Err(SqlError::new(
            "42704",
            format!("type \"{}\" does not exist", text_of(&args[0])),
        )),
        oid => Ok(oid),
    }
}

fn regtype_out(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let oid = oid_arg(&args[0]);
    Ok(Value::Text(
        match u32::try_from(oid).ok().map(|o| format_type(o, None)) {
            Some(name) if name != "???" => name,
            _ => oid.to_string(),
        },
    ))
}

fn to_regnamespace(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let parts = model::split_qualified(&text_of(&args[0]));
    let found = match parts.as_slice() {
        [name] => oids::namespace_oid(name),
        _ => None,
    };
    Ok(found.map_or(Value::Null, Value::BigInt))
}

fn regnamespace_in(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    match to_regnamespace(args, ctx)? {
        Value::Null => Err(crate::types::missing_schema(&text_of(&args[0]))),
        oid => Ok(oid),
    }
}

fn regnamespace_out(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let oid = oid_arg(&args[0]);
    Ok(Value::Text(
        oids::namespace_name(oid).map_or_else(|| oid.to_string(), str::to_owned),
    ))
}

fn get_userbyid(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let oid = oid_arg(&args[0]);
    let role = ctx
        .engine()?
        .roles()?
        .into_iter()
        .find(|r| oids::role(r.id) == oid);
    Ok(Value::Text(if oid == oids::SUPERUSER {
        ctx.bootstrap_name()
    } else if oid == oids::DATABASE_OWNER {
        oids::DATABASE_OWNER_NAME.to_owned()
    } else if let Some(role) = role {
        role.name
    } else {
        format!("unknown (OID={oid})")
    }))
}

/// Everything is on the search path (`pg_catalog`, `public`) except `information_schema`.
fn table_is_visible(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let oid = oid_arg(&args[0]);
    let hidden = super::all()
        .enumerate()
        .any(|(n, v)| oids::view(n, v.name) == oid && v.schema == "information_schema");
    Ok(Value::Boolean(!hidden))
}

/// `format_type(type_oid, typmod)`; a NULL modifier gives the bare name.
/// An enum type (in schema `public`) is qualified when `public` is not on the search path, as
/// PostgreSQL qualifies a type that is not visible (pg_dump clears the path, so its dump names
/// `public.mood`).
fn format_type_fn(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let Some(oid) = int_arg(&args[0]) else {
        return Ok(Value::Null);
    };
    let typmod = int_arg(&args[1]).map(|m| m as i32);
    let Ok(oid) = u32::try_from(oid) else {
        return Ok(Value::Text("???".to_owned()));
    };
    let name = format_type(oid, typmod);
    let is_enum = steady_types::enums::enum_type(oid).is_some();
    let public_visible = ctx
        .setting("search_path")?
        .split(',')
        .any(|schema| schema.trim().trim_matches('"') == "public");
    Ok(Value::Text(match is_enum && !public_visible {
        true => format!("public.{name}"),
        false => name,
    }))
}

/// `pg_get_indexdef(index_oid [, column, pretty])`: the CREATE INDEX statement, or with a column
/// number above 0 that column's name.
fn get_indexdef(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let oid = oid_arg(&args[0]);
    let column = args.get(1).and_then(int_arg).unwrap_or(0);
    let Some(Relation::Index(table, index)) = model::relation(ctx.engine()?, oid)? else {
        return Ok(Value::Null);
    };
    Ok(match usize::try_from(column - 1) {
        Ok(n) => match index.all_columns().get(n) {
            Some(&position) => Value::Text(column_list(&table, &[position])),
            None => Value::Null,
        },
        Err(_) => Value::Text(index_definition(&table, &index)),
    })
}

fn get_constraintdef(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let oid = oid_arg(&args[0]);
    Ok(model::all_constraints(ctx.engine()?)
        .iter()
        .find(|c| c.oid == oid)
        .map_or(Value::Null, |c| Value::Text(constraint_definition(c))))
}

/// `pg_get_expr(expr, relation)`: expressions are stored as their SQL text already.
fn get_expr(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(text_of(&args[0])))
}

fn encoding_to_char(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(
        match int_arg(&args[0]).map(|e| e as i32) {
            Some(0) => "SQL_ASCII",
            Some(oids::UTF8) => "UTF8",
            _ => "",
        }
        .to_owned(),
    ))
}

fn is_publishable(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let relation = model::relation(ctx.engine()?, oid_arg(&args[0]))?;
    Ok(Value::Boolean(matches!(relation, Some(Relation::Table(_)))))
}
