//! The binder's hooks for catalog syntax: casts to `regclass` / `regtype` / `regnamespace` and to
//! schema-qualified or array types, `x = ANY(array)`, `array[i]`, `ARRAY(subquery)`, `pg_typeof`
//! and the table function `pg_partition_ancestors`.
//!
//! A `reg*` value is an oid that prints as a name. Without such a type in the engine, a cast to
//! one is bound by what it is applied to: a name (text, an untyped literal or parameter) becomes
//! the oid (`'accounts'::regclass`, compared with oid columns); an integer literal or parameter
//! stays the oid (`16385::regclass` in `IN (...)` lists); any other oid-valued expression becomes
//! the name (`c.oid::regclass` in a select list). Arrays are text (see [`crate::system::arrays`]).

use sqlparser::ast::{self, BinaryOperator, Expr as AstExpr};
use steady_types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::aggregate::{AggCall, AggFunc};
use crate::execution::expr::{Expr, Subquery, SubqueryKind};
use crate::execution::functions::Function;
use crate::execution::plan::{Column, Plan};
use crate::execution::set_functions::{SetCall, SetFunction};
use crate::planner::bind::{coerce_to, Binder, Scope, Typed};
use crate::system::functions::{
    ARRAY_CAT, ARRAY_ELEMENT_TEXT, ARRAY_FROM_ELEMENTS, ARRAY_OF, REGCLASS_IN, REGCLASS_OUT,
    REGNAMESPACE_IN, REGNAMESPACE_OUT, REGTYPE_IN, REGTYPE_OUT, SLICE, SUBSCRIPT,
};
use crate::system::pg_type::{format_type, type_oid};
use crate::types::ops::{as_i64, category, Category};
use crate::types::{normalize_ident, object_name};

/// Casts that need more than the engine's value conversions; `None` for the others.
pub fn bind_special_cast(
    binder: &mut Binder<'_>,
    expr: &AstExpr,
    data_type: &ast::DataType,
    scope: &Scope,
) -> Result<Option<Typed>> {
    if let Some((input, output)) = reg_functions(data_type) {
        return bind_reg_cast(binder, expr, input, output, scope).map(Some);
    }
    let Some(plain) = plain_type(data_type) else {
        return Ok(None);
    };
    let cast = AstExpr::Cast {
        kind: ast::CastKind::DoubleColon,
        expr: Box::new(expr.clone()),
        data_type: plain,
        format: None,
    };
    binder.bind_expr(&cast, scope).map(Some)
}

/// The name-to-oid and oid-to-name functions of a `reg*` type.
fn reg_functions(data_type: &ast::DataType) -> Option<(&'static Function, &'static Function)> {
    let name = match data_type {
        ast::DataType::Regclass => "regclass".to_owned(),
        ast::DataType::Custom(name, _) => object_name(name).1,
        _ => return None,
    };
    match name.as_str() {
        "regclass" => Some((&REGCLASS_IN, &REGCLASS_OUT)),
        "regtype" => Some((&REGTYPE_IN, &REGTYPE_OUT)),
        "regnamespace" => Some((&REGNAMESPACE_IN, &REGNAMESPACE_OUT)),
        _ => None,
    }
}

fn bind_reg_cast(
    binder: &mut Binder<'_>,
    expr: &AstExpr,
    input: &'static Function,
    output: &'static Function,
    scope: &Scope,
) -> Result<Typed> {
    let (bound, ty) = binder.bind_expr(expr, scope)?;
    Ok(match (bound, ty) {
        (Expr::Literal(v @ (Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_))), _) => (
            Expr::Literal(Value::BigInt(as_i64(&v))),
            Some(DataType::BigInt),
        ),
        (param @ Expr::Param { .. }, Some(t)) if category(&t) == Category::Numeric => (
            coerce_to(param, Some(t), DataType::BigInt)?,
            Some(DataType::BigInt),
        ),
        (oid, Some(t)) if category(&t) == Category::Numeric => {
            (Expr::Call(output, vec![oid]), Some(DataType::Text))
        }
        (name, ty) => {
            let name = text_operand(binder, name, ty)?;
            (Expr::Call(input, vec![name]), Some(DataType::BigInt))
        }
    })
}

/// An operand used as text; an untyped parameter is typed `text` from here on.
fn text_operand(binder: &mut Binder<'_>, expr: Expr, ty: Option<DataType>) -> Result<Expr> {
    if let (Expr::Param { index, ty: None }, None) = (&expr, ty) {
        binder.params[*index] = Some(DataType::Text);
    }
    coerce_to(expr, ty, DataType::Text)
}

/// Whether an array type has an engine type (`text[]`, `varchar[]`, arrays of numbers and
/// booleans); arrays of other types are read as their text.
fn is_engine_array(element: &ast::ArrayElemTypeDef) -> bool {
    crate::types::array_type(element).is_ok()
}

/// The engine type standing for a type the engine lacks or the parser leaves schema-qualified
/// (`pg_catalog.text`, `"char"`, `int2[]`).
fn plain_type(data_type: &ast::DataType) -> Option<ast::DataType> {
    use ast::DataType as T;
    match data_type {
        T::Array(element) if is_engine_array(element) => None,
        T::Array(_) => Some(T::Text),
        T::Custom(name, _) => Some(match object_name(name).1.as_str() {
            "text" | "char" | "int2vector" | "oidvector" | "regproc" => T::Text,
            "varchar" => T::Varchar(None),
            "numeric" => T::Numeric(ast::ExactNumberInfo::None),
            "date" => T::Date,
            "timestamp" => T::Timestamp(None, ast::TimezoneInfo::None),
            "timestamptz" => T::Timestamp(None, ast::TimezoneInfo::Tz),
            "uuid" => T::Uuid,
            "interval" => T::Interval {
                fields: None,
                precision: None,
            },
            "bytea" => T::Bytea,
            "boolean" => T::Boolean,
            _ => return None,
        }),
        _ => None,
    }
}

/// `x = ANY(array)` for an array that is not a subquery (those the binder handles itself).
pub fn bind_any_array(
    binder: &mut Binder<'_>,
    left: &AstExpr,
    op: &BinaryOperator,
    right: &AstExpr,
    all: bool,
    scope: &Scope,
) -> Result<Typed> {
    let quantifier = if all { "ALL" } else { "ANY" };
    let cmp = crate::planner::bind_expr::comparison(op)
        .ok_or_else(|| SqlError::unsupported(format!("{op} {quantifier} over an array")))?;
    let (needle, needle_type) = binder.bind_expr(left, scope)?;
    let (array, array_type) = binder.bind_expr(right, scope)?;
    let element = array_type
        .as_ref()
        .and_then(DataType::element_type)
        .or(needle_type)
        .unwrap_or(DataType::Text);
    let array = match (array_type, element.array_type()) {
        (None, Some(typed)) => coerce_to(array, None, typed)?,
        _ => array,
    };
    let null = Expr::Literal(Value::Null);
    let (needle, _, _) = binder.unify(needle, needle_type, null, Some(element), cmp.symbol())?;
    let args = vec![
        needle,
        array,
        Expr::Literal(Value::Text(cmp.symbol().to_owned())),
        Expr::Literal(Value::Boolean(all)),
        Expr::Literal(Value::Text(element.to_string())),
    ];
    Ok((
        Expr::Call(&crate::system::arrays::ARRAY_QUANTIFIED, args),
        Some(DataType::Boolean),
    ))
}

/// `a @> b` (contains), `a <@ b` (is contained by) and `a && b` (overlaps) of two arrays: an
/// untyped side takes the other's type; the elements are compared by their type.
pub fn bind_array_set_operator(
    binder: &mut Binder<'_>,
    symbol: &str,
    (a, at): Typed,
    (b, bt): Typed,
) -> Result<Typed> {
    let Some(ty) = at.or(bt).filter(|t| t.element_type().is_some()) else {
        let unknown = DataType::Text;
        return Err(SqlError::no_operator(
            &at.unwrap_or(unknown),
            &symbol,
            &bt.unwrap_or(unknown),
        ));
    };
    let a = binder.settle(a, at, ty)?;
    let b = binder.settle(b, bt, ty)?;
    let element = ty.element_type().unwrap_or(DataType::Text);
    let args = vec![
        a,
        b,
        Expr::Literal(Value::Text(symbol.to_owned())),
        Expr::Literal(Value::Text(element.to_string())),
    ];
    Ok((
        Expr::Call(&crate::system::arrays::ARRAY_SET_OPERATOR, args),
        Some(DataType::Boolean),
    ))
}

/// `ARRAY[a, b, ...]`, one dimension: the array's text form (`{a,b}`), as arrays are here.
pub fn bind_array_constructor(
    binder: &mut Binder<'_>,
    array: &ast::Array,
    scope: &Scope,
) -> Result<Typed> {
    if array.elem.iter().any(|e| matches!(e, AstExpr::Array(_))) {
        return Err(SqlError::unsupported("multidimensional arrays"));
    }
    let mut elements = Vec::with_capacity(array.elem.len());
    let mut types = Vec::with_capacity(array.elem.len());
    for element in &array.elem {
        let (expr, ty) = binder.bind_expr(element, scope)?;
        elements.push(expr);
        types.push(ty);
    }
    let untyped = types.iter().all(Option::is_none);
    let ty = match constructed_array_type(&types) {
        Some(ty) => ty,
        // `ARRAY['a', NULL]`: PostgreSQL makes untyped elements text.
        None if untyped => DataType::TextArray,
        None => DataType::Text,
    };
    Ok((Expr::Call(&ARRAY_OF, elements), Some(ty)))
}

/// The array type of elements of `types` when they all have one type that has an array type
/// (untyped ones aside): `ARRAY[1, 2]` is an `integer[]`, `ARRAY['a']` a `text[]`;
/// `ARRAY[1, 2.5]` keeps its text form.
fn constructed_array_type(types: &[Option<DataType>]) -> Option<DataType> {
    let mut known = types.iter().flatten();
    let first = known.next()?;
    if known.any(|t| t.array_type() != first.array_type()) {
        return None;
    }
    first.array_type()
}

/// `array[i]`: its type is unknown (the element's, which the text does not record).
pub fn bind_subscript(
    binder: &mut Binder<'_>,
    root: &AstExpr,
    access: &[ast::AccessExpr],
    scope: &Scope,
) -> Result<Typed> {
    let unsupported = || {
        SqlError::unsupported(format!(
            "expression {root}{}",
            access.iter().map(|a| a.to_string()).collect::<String>()
        ))
    };
    let index = match access {
        [ast::AccessExpr::Subscript(ast::Subscript::Index { index })] => index,
        [ast::AccessExpr::Subscript(ast::Subscript::Slice {
            lower_bound,
            upper_bound,
            stride: None,
        })] => return bind_slice(binder, root, [lower_bound, upper_bound], scope),
        _ => return Err(unsupported()),
    };
    let (array, ty) = binder.bind_expr(root, scope)?;
    let (index, _) = binder.bind_expr_as(index, scope, DataType::Integer)?;
    let element = Expr::Call(&SUBSCRIPT, vec![array, index]);
    Ok(typed_element(element, ty))
}

/// `arr[lower:upper]` (either bound may be left out: the array's own): the elements between,
/// an array of the same type.
fn bind_slice(
    binder: &mut Binder<'_>,
    root: &AstExpr,
    bounds: [&Option<AstExpr>; 2],
    scope: &Scope,
) -> Result<Typed> {
    let (array, ty) = binder.bind_expr(root, scope)?;
    let mut args = vec![array];
    // A bound left out is the array's own: the farthest one, which the slice clamps to it.
    for (bound, farthest) in bounds.into_iter().zip([i64::MIN, i64::MAX]) {
        args.push(match bound {
            Some(bound) => binder.bind_expr_as(bound, scope, DataType::BigInt)?.0,
            None => Expr::Literal(Value::BigInt(farthest)),
        });
    }
    Ok((Expr::Call(&SLICE, args), ty))
}

/// `a || b` where one side is an array: the arrays joined, an element operand appended or
/// prepended (an untyped literal beside an array is read as an array, as PostgreSQL resolves
/// it), cast to the array's type. None when neither side is an array; 42883 for an element of
/// another kind than the array's (`integer[] || text`).
pub fn array_concat(
    (a, at): (&Expr, Option<DataType>),
    (b, bt): (&Expr, Option<DataType>),
) -> Result<Option<Typed>> {
    let is_array = |ty: Option<DataType>| ty.and_then(|t| t.element_type()).is_some();
    let Some(ty) = [at, bt].into_iter().flatten().find(|t| is_array(Some(*t))) else {
        return Ok(None);
    };
    let element = ty.element_type().expect("an array type");
    let operand = |expr: &Expr, operand_ty: Option<DataType>| -> Result<Expr> {
        match operand_ty {
            None if matches!(expr, Expr::Literal(_)) => Ok(expr.clone()),
            Some(t) if is_array(Some(t)) => Ok(expr.clone()),
            Some(t) if category(&t) != category(&element) => Err(SqlError::no_operator(
                &crate::types::type_name(at),
                &"||",
                &crate::types::type_name(bt),
            )),
            _ => Ok(Expr::Call(&ARRAY_OF, vec![expr.clone()])),
        }
    };
    let joined = Expr::Call(&ARRAY_CAT, vec![operand(a, at)?, operand(b, bt)?]);
    Ok(Some((Expr::Cast(Box::new(joined), ty), Some(ty))))
}

/// An element of an array of type `array` (given as its text): of the element type when the
/// array's type has one, else untyped.
pub fn typed_element(element: Expr, array: Option<DataType>) -> Typed {
    match array.as_ref().and_then(DataType::element_type) {
        Some(DataType::Text) | None => (element, None),
        Some(ty) => (Expr::Cast(Box::new(element), ty), Some(ty)),
    }
}

/// `ARRAY(subquery)`: the subquery's values, quoted and joined into the array's text.
pub fn bind_array_subquery(binder: &mut Binder<'_>, query: &ast::Query) -> Result<Typed> {
    let saved = binder.take_aggregates();
    let result = binder.bind_subquery(query);
    binder.restore_aggregates(saved);
    let (bound, correlated) = result?;
    if bound.columns.len() != 1 {
        return Err(SqlError::syntax("subquery must return only one column"));
    }
    let column_type = bound.columns[0].ty;
    let joined = AggCall {
        func: AggFunc::StringAgg,
        args: vec![
            Expr::Call(&ARRAY_ELEMENT_TEXT, vec![Expr::Column(0)]),
            Expr::Literal(Value::Text(",".to_owned())),
        ],
        distinct: false,
        filter: None,
        order_by: Vec::new(),
        ty: Some(DataType::Text),
    };
    let plan = Plan::Project {
        input: Box::new(Plan::Aggregate {
            input: Box::new(bound.plan),
            groups: Vec::new(),
            aggregates: vec![joined],
            sets: Vec::new(),
        }),
        exprs: vec![Expr::Call(&ARRAY_FROM_ELEMENTS, vec![Expr::Column(0)])],
    };
    let subquery = Subquery {
        id: binder.next_subquery_id(),
        plan,
        kind: SubqueryKind::Scalar,
        correlated,
    };
    // An array of the column's type (text[] for a type without an array type here).
    let ty = element_array_type(column_type);
    Ok((Expr::Subquery(Box::new(subquery)), Some(ty)))
}

/// The array type whose elements are of type `element`: `text[]` when SteadyDB has no array of
/// that type (its elements are then their text).
fn element_array_type(element: Option<DataType>) -> DataType {
    element
        .as_ref()
        .and_then(DataType::array_type)
        .unwrap_or(DataType::TextArray)
}

/// `pg_typeof(x)`: the name of `x`'s type (`unknown` for untyped literals and NULL).
pub fn bind_pg_typeof(binder: &mut Binder<'_>, args: &[&AstExpr], scope: &Scope) -> Result<Typed> {
    let [arg] = args else {
        return Err(SqlError::undefined_function(format!(
            "function pg_typeof with {} arguments does not exist",
            args.len()
        )));
    };
    let (_, ty) = binder.bind_expr(arg, scope)?;
    let name = ty.map_or_else(|| "unknown".to_owned(), |t| format_type(type_oid(&t), None));
    Ok((Expr::Literal(Value::Text(name)), Some(DataType::Text)))
}

/// `unnest(array, …)` in FROM (arrays being their text form, one dimension): for one array the
/// subscripts from its lower to its upper bound (`generate_series`, none for NULL or an empty
/// array), each giving its element; for several, as many rows as the longest has, the
/// shorter ones giving NULL past their end (PostgreSQL's zip). WITH ORDINALITY numbers the rows
/// from 1.
pub fn bind_unnest(
    binder: &mut Binder<'_>,
    args: &[&AstExpr],
    alias: Option<&ast::TableAlias>,
    with_ordinality: bool,
) -> Result<(Plan, Scope)> {
    let bound_function = |name: &str, array: &Expr| -> Result<Expr> {
        let function = crate::system::function(name, 2)
            .ok_or_else(|| SqlError::new("XX000", format!("{name} is missing")))?;
        Ok(Expr::Call(
            function,
            vec![array.clone(), Expr::Literal(Value::Integer(1))],
        ))
    };
    let mut arrays = Vec::with_capacity(args.len());
    for arg in args {
        arrays.push(binder.bind_expr_with_level(arg, &Scope::default())?);
    }
    let series = match arrays.as_slice() {
        [(array, _)] => Plan::Series {
            start: bound_function("array_lower", array)?,
            stop: bound_function("array_upper", array)?,
            step: None,
        },
        _ => Plan::Series {
            start: Expr::Literal(Value::Integer(1)),
            stop: Expr::Call(
                crate::execution::functions::lookup("greatest", arrays.len())?,
                arrays
                    .iter()
                    .map(|(array, _)| bound_function("array_length", array))
                    .collect::<Result<_>>()?,
            ),
            step: None,
        },
    };
    let mut exprs = Vec::with_capacity(arrays.len() + 1);
    let mut columns = Vec::with_capacity(arrays.len() + 1);
    for ((array, array_ty), arg) in arrays.iter().zip(args) {
        // Row n's element: subscript lower + n - 1 (n itself for one array, which counts from
        // its lower bound).
        let subscript = match arrays.len() {
            1 => Expr::Column(0),
            _ => Expr::Arith(
                crate::types::ops::ArithOp::Add,
                Box::new(Expr::Column(0)),
                Box::new(Expr::Arith(
                    crate::types::ops::ArithOp::Sub,
                    Box::new(bound_function("array_lower", array)?),
                    Box::new(Expr::Literal(Value::Integer(1))),
                )),
            ),
        };
        let element = Expr::Call(&SUBSCRIPT, vec![array.clone(), subscript]);
        let (element, element_ty) = match (typed_element(element, *array_ty), cast_element(arg)) {
            // An array of a type kept as text (`timestamptz[]`, `date[]`): the cast names it.
            ((element, None), Some(ty)) => (Expr::Cast(Box::new(element), ty), Some(ty)),
            (typed, _) => typed,
        };
        exprs.push(element);
        columns.push(Column::new(
            "unnest",
            Some(element_ty.unwrap_or(DataType::Text)),
        ));
    }
    if with_ordinality {
        let first = match arrays.as_slice() {
            [(array, _)] => bound_function("array_lower", array)?,
            _ => Expr::Literal(Value::Integer(1)),
        };
        exprs.push(Expr::Arith(
            crate::types::ops::ArithOp::Add,
            Box::new(Expr::Arith(
                crate::types::ops::ArithOp::Sub,
                Box::new(Expr::Column(0)),
                Box::new(first),
            )),
            Box::new(Expr::Literal(Value::Integer(1))),
        ));
        columns.push(Column::new("ordinality", Some(DataType::BigInt)));
    }
    let plan = Plan::Project {
        input: Box::new(series),
        exprs,
    };
    let alias_name = alias.map_or_else(|| "unnest".to_owned(), |a| normalize_ident(&a.name));
    if let Some(alias) = alias {
        if alias.columns.is_empty() && arrays.len() == 1 {
            columns[0].name = alias_name.clone();
        }
        for (column, name) in columns.iter_mut().zip(&alias.columns) {
            column.name = normalize_ident(&name.name);
        }
    }
    Ok((plan, Scope::of_table(&alias_name, &columns)))
}

/// The element type of an array written as a cast to an array type (`(x)::timestamptz[]`), when
/// the engine has that type.
fn cast_element(arg: &AstExpr) -> Option<DataType> {
    match arg {
        AstExpr::Nested(inner) => cast_element(inner),
        AstExpr::Cast {
            data_type: ast::DataType::Array(element),
            ..
        } => crate::types::array_element(element).and_then(|e| crate::types::convert_type(e).ok()),
        _ => None,
    }
}

/// `pg_options_to_table(options)`: one row per `name=value` element of a `text[]` of options
/// (`reloptions`, `attoptions`...), split at its first `=`.
fn bind_options_to_table(
    binder: &mut Binder<'_>,
    arg: &AstExpr,
    alias: Option<&ast::TableAlias>,
) -> Result<(Plan, Scope)> {
    let (elements, _) = bind_unnest(binder, &[arg], None, false)?;
    let function = |name: &str, args: usize| crate::execution::functions::lookup(name, args);
    let element = || Expr::Column(0);
    let text = |t: &str| Expr::Literal(Value::Text(t.to_owned()));
    let option_name = Expr::Call(
        function("split_part", 3)?,
        vec![element(), text("="), Expr::Literal(Value::Integer(1))],
    );
    let after_equals = Expr::Arith(
        crate::types::ops::ArithOp::Add,
        Box::new(Expr::Call(
            function("strpos", 2)?,
            vec![element(), text("=")],
        )),
        Box::new(Expr::Literal(Value::Integer(1))),
    );
    let option_value = Expr::Call(function("substr", 2)?, vec![element(), after_equals]);
    let plan = Plan::Project {
        input: Box::new(elements),
        exprs: vec![option_name, option_value],
    };
    let mut columns = vec![
        Column::new("option_name", Some(DataType::Text)),
        Column::new("option_value", Some(DataType::Text)),
    ];
    for (column, name) in columns
        .iter_mut()
        .zip(alias.map_or(&[][..], |a| &a.columns))
    {
        column.name = normalize_ident(&name.name);
    }
    let alias_name = alias.map_or_else(
        || "pg_options_to_table".to_owned(),
        |a| normalize_ident(&a.name),
    );
    Ok((plan, Scope::of_table(&alias_name, &columns)))
}

/// A set-returning function of the select list (`regexp_matches`, `json_array_elements`...) in
/// FROM: its rows as one column named after it (or its alias); `WITH ORDINALITY` is refused
/// (0A000) for these.
fn bind_set_function_source(
    binder: &mut Binder<'_>,
    name: &str,
    functions: &[(SetFunction, &str)],
    args: &[ast::FunctionArg],
    alias: Option<&ast::TableAlias>,
    with_ordinality: bool,
) -> Result<(Plan, Scope)> {
    if with_ordinality {
        return Err(SqlError::unsupported(format!("{name} WITH ORDINALITY")));
    }
    let (min, max) = functions[0].0.arguments();
    if !(min..=max).contains(&args.len()) {
        return Err(SqlError::undefined_function(format!(
            "function {name} with {} arguments does not exist",
            args.len()
        )));
    }
    let mut bound = Vec::with_capacity(args.len());
    let mut types = Vec::with_capacity(args.len());
    for arg in args {
        let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = arg else {
            return Err(SqlError::syntax(format!("{name} takes plain arguments")));
        };
        let (expr, ty) = binder.bind_expr_with_level(e, &Scope::default())?;
        bound.push(expr);
        types.push(ty);
    }
    let plan = Plan::ProjectSet {
        input: Box::new(Plan::Values {
            width: 0,
            rows: vec![Vec::new()],
        }),
        calls: functions
            .iter()
            .map(|&(function, _)| SetCall {
                function,
                args: bound.clone(),
            })
            .collect(),
    };
    let alias_name = alias.map_or_else(|| name.to_owned(), |a| normalize_ident(&a.name));
    let alias_columns = alias.map_or(&[][..], |a| &a.columns);
    let columns: Vec<Column> = functions
        .iter()
        .enumerate()
        .map(|(i, &(function, column))| {
            let column_name = match (alias_columns.get(i), alias) {
                (Some(c), _) => normalize_ident(&c.name),
                // One column takes the alias's name, as PostgreSQL names a scalar function's.
                (None, Some(_)) if functions.len() == 1 => alias_name.clone(),
                _ => column.to_owned(),
            };
            Column::new(&column_name, function.result_type(&types))
        })
        .collect();
    Ok((plan, Scope::of_table(&alias_name, &columns)))
}

/// Catalog functions in FROM: `pg_partition_ancestors(rel)` is `rel` itself (nothing is
/// partitioned), and `unnest(array)` one row per element; each with an ordinality column `WITH
/// ORDINALITY`.
pub fn bind_table_function(
    binder: &mut Binder<'_>,
    name: &str,
    args: &[ast::FunctionArg],
    alias: Option<&ast::TableAlias>,
    with_ordinality: bool,
) -> Result<(Plan, Scope)> {
    if let Some(columns) = crate::execution::set_functions::json_each_columns(name) {
        return bind_set_function_source(binder, name, &columns, args, alias, with_ordinality);
    }
    match SetFunction::by_name(name) {
        Some(SetFunction::Unnest) | None => {}
        Some(function) => {
            let functions = [(function, name)];
            return bind_set_function_source(
                binder,
                name,
                &functions,
                args,
                alias,
                with_ordinality,
            );
        }
    }
    let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))] = args else {
        return Err(SqlError::undefined_function(format!(
            "function {name} does not exist"
        )));
    };
    if name == "unnest" {
        return bind_unnest(binder, &[arg], alias, with_ordinality);
    }
    if name == "pg_options_to_table" && !with_ordinality {
        return bind_options_to_table(binder, arg, alias);
    }
    if name != "pg_partition_ancestors" {
        return Err(SqlError::undefined_function(format!(
            "function {name} does not exist"
        )));
    }
    let (relid, _) = binder.bind_expr_with_level(arg, &Scope::default())?;
    let mut row = vec![relid];
    let mut columns = vec![Column::new("relid", Some(DataType::BigInt))];
    if with_ordinality {
        row.push(Expr::Literal(Value::BigInt(1)));
        columns.push(Column::new("ordinality", Some(DataType::BigInt)));
    }
    let alias_name = alias.map_or_else(|| name.to_owned(), |a| normalize_ident(&a.name));
    for (column, alias) in columns
        .iter_mut()
        .zip(alias.map_or(&[][..], |a| &a.columns))
    {
        column.name = normalize_ident(&alias.name);
    }
    let plan = Plan::Values {
        width: row.len(),
        rows: vec![row],
    };
    Ok((plan, Scope::of_table(&alias_name, &columns)))
}
