//! Function calls: built-in functions by name and argument types, COALESCE, aggregate calls
//! (DISTINCT, FILTER, ORDER BY; the ordered-set aggregates with WITHIN GROUP), which the binder
//! collects for the aggregate node, and window calls (`OVER`, bound in `bind::window`).

use super::*;
use crate::execution::json::array_as_json;

impl Binder<'_> {
    pub(super) fn bind_function(
        &mut self,
        function: &ast::Function,
        scope: &Scope,
    ) -> Result<Typed> {
        let (_, name) = object_name(&function.name);
        let list = match &function.args {
            ast::FunctionArguments::List(list) => Some(list),
            ast::FunctionArguments::None => None,
            ast::FunctionArguments::Subquery(query) if name == "array" => {
                return crate::planner::binding::bind_array_subquery(self, query)
            }
            ast::FunctionArguments::Subquery(_) => {
                return Err(SqlError::unsupported("this function call"))
            }
        };
        if function.over.is_some() {
            return self.bind_window(&name, function, list, scope);
        }
        if let Some(bound) = self.bind_whole_row_json(&name, function, list, scope)? {
            return Ok(bound);
        }
        if let Some(set_function) = SetFunction::by_name(&name) {
            if self.set_calls.is_none() {
                return Err(SqlError::unsupported(
                    "set-returning functions outside a select list or FROM",
                ));
            }
            let args: Vec<&AstExpr> = list
                .map(|l| l.args.iter().map(plain_arg).collect::<Result<Vec<_>>>())
                .transpose()?
                .unwrap_or_default();
            return self.bind_set_call(set_function, &name, &args, scope);
        }
        if let Some(func) = AggFunc::by_name(&name) {
            return self.bind_aggregate(func, function, list, scope);
        }
        if !function.within_group.is_empty() {
            return Err(SqlError::undefined_function(format!(
                "function {name} with WITHIN GROUP does not exist"
            )));
        }
        if let Some(positional) = named_arguments(&name, list)? {
            let args: Vec<&AstExpr> = positional.iter().collect();
            return self.bind_call(&name, &args, scope);
        }
        let args: Vec<&AstExpr> = list
            .map(|l| l.args.iter().map(plain_arg).collect::<Result<Vec<_>>>())
            .transpose()?
            .unwrap_or_default();
        match name.as_str() {
            "coalesce" => self.bind_coalesce(&args, scope),
            "pg_typeof" => crate::planner::binding::bind_pg_typeof(self, &args, scope),
            "enum_first" | "enum_last" => self.bind_enum_end(&name, &args, scope),
            "current_time" => Err(SqlError::unsupported(
                "current_time (time with time zone; localtime is the time of day without one)",
            )),
            "enum_range" => Err(SqlError::unsupported(
                "enum_range (there are no arrays of enum types)",
            )),
            "nextval" | "currval" | "setval" => self.bind_call(&name, &args, scope),
            _ => self.bind_call(&name, &args, scope),
        }
    }

    /// `enum_first(x)` and `enum_last(x)`: the first or last value of `x`'s enum type (the
    /// value of `x` is not read, so `NULL::mood` serves); 42883 for an argument of another type.
    fn bind_enum_end(&mut self, name: &str, args: &[&AstExpr], scope: &Scope) -> Result<Typed> {
        let types = args
            .iter()
            .map(|arg| Ok(self.bind_expr(arg, scope)?.1))
            .collect::<Result<Vec<_>>>()?;
        let [Some(DataType::Enum(oid))] = types.as_slice() else {
            return Err(no_such_function(name, &types));
        };
        let function = match name {
            "enum_first" => &functions::ENUM_FIRST,
            _ => &functions::ENUM_LAST,
        };
        let oid = *oid;
        let oid_arg = Expr::Literal(Value::BigInt(i64::from(oid)));
        Ok((
            Expr::Call(function, vec![oid_arg]),
            Some(DataType::Enum(oid)),
        ))
    }

    /// An argument of `corr` and its kin: a number, as a double (an untyped literal read as
    /// one); 42883 for any other type, as PostgreSQL has these for float8 only.
    fn bind_regression_argument(
        &mut self,
        func: AggFunc,
        e: &AstExpr,
        scope: &Scope,
    ) -> Result<Typed> {
        let (expr, ty) = self.bind_expr(e, scope)?;
        if ty.is_some_and(|t| ops::category(&t) != Category::Numeric) {
            return Err(no_such_function(func.name(), &[ty]));
        }
        Ok((
            coerce_to(expr, ty, DataType::Double)?,
            Some(DataType::Double),
        ))
    }

    /// `row_to_json(t)`, `to_json(t)`, `to_jsonb(t)`, `json_agg(t)` and `jsonb_agg(t)` of a whole
    /// row (`t` names a FROM item, not a column): an object of the item's columns by name, json
    /// written as PostgreSQL writes a row (`{"a":1,"b":"x"}`), jsonb as `jsonb_build_object`.
    /// A whole row is read nowhere else (there is no record type). None: not such a call.
    fn bind_whole_row_json(
        &mut self,
        name: &str,
        function: &ast::Function,
        list: Option<&ast::FunctionArgumentList>,
        scope: &Scope,
    ) -> Result<Option<Typed>> {
        let row = match list.map(|l| l.args.as_slice()) {
            Some(
                [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(AstExpr::Identifier(table)))],
            ) => normalize_ident(table),
            _ => return Ok(None),
        };
        let Some(columns) = scope.whole_row(&row) else {
            return Ok(None);
        };
        let (function, ty) = match name {
            "row_to_json" | "to_json" => (&crate::execution::json::ROW_TO_JSON, DataType::Json),
            "to_jsonb" => (
                functions::lookup("jsonb_build_object", 2 * columns.len())?,
                DataType::Jsonb,
            ),
            "json_agg" | "jsonb_agg" => {
                let per_row = if name == "json_agg" {
                    "row_to_json"
                } else {
                    "to_jsonb"
                };
                let arg = AstExpr::Function(ast::Function {
                    name: ast::ObjectName::from(vec![ast::Ident::new(per_row)]),
                    uses_odbc_syntax: false,
                    parameters: ast::FunctionArguments::None,
                    args: function.args.clone(),
                    filter: None,
                    null_treatment: None,
                    over: None,
                    within_group: Vec::new(),
                });
                let mut per_row_list = list.cloned().unwrap_or_else(|| ast::FunctionArgumentList {
                    duplicate_treatment: None,
                    args: Vec::new(),
                    clauses: Vec::new(),
                });
                per_row_list.args =
                    vec![ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))];
                let mut call = function.clone();
                call.args = ast::FunctionArguments::List(per_row_list.clone());
                let func = match name {
                    "json_agg" => AggFunc::JsonAggRows,
                    _ => AggFunc::JsonbAgg,
                };
                return self
                    .bind_aggregate(func, &call, Some(&per_row_list), scope)
                    .map(Some);
            }
            _ => return Ok(None),
        };
        let mut args = Vec::with_capacity(2 * columns.len());
        for i in columns {
            let column = &scope.columns[i];
            args.push(Expr::Literal(Value::Text(column.name.clone())));
            args.push(array_as_json(Expr::Column(i), column.ty));
        }
        Ok(Some((Expr::Call(function, args), Some(ty))))
    }

    /// A set-returning call in a select list: its column after the input's (see
    /// [`crate::execution::set_functions`]); set-returning calls in its arguments are refused.
    fn bind_set_call(
        &mut self,
        function: SetFunction,
        name: &str,
        args: &[&AstExpr],
        scope: &Scope,
    ) -> Result<Typed> {
        let (min, max) = function.arguments();
        if !(min..=max).contains(&args.len()) {
            return Err(SqlError::undefined_function(format!(
                "function {name} with {} arguments does not exist",
                args.len()
            )));
        }
        let level = self.set_calls.take();
        let bound: Result<Vec<Typed>> = args.iter().map(|a| self.bind_expr(a, scope)).collect();
        self.set_calls = level;
        let (exprs, types, ty) = match function {
            SetFunction::GenerateSeries => {
                let (exprs, ty) = crate::planner::bind::from::series_args(bound?)?;
                (exprs, Vec::new(), Some(ty))
            }
            _ => {
                let (exprs, types): (Vec<Expr>, Vec<Option<DataType>>) = bound?.into_iter().unzip();
                let ty = function.result_type(&types);
                (exprs, types, ty)
            }
        };
        let (base, calls) = self.set_calls.as_mut().expect("a select list's set calls");
        let column = *base + calls.len();
        calls.push(SetCall {
            function,
            args: exprs,
        });
        if matches!(function, SetFunction::Unnest) {
            let array = types.first().copied().flatten();
            return Ok(crate::planner::binding::typed_element(
                Expr::Column(column),
                array,
            ));
        }
        Ok((Expr::Column(column), ty))
    }

    /// A call of a scalar function by name.
    pub fn bind_call(&mut self, name: &str, args: &[&AstExpr], scope: &Scope) -> Result<Typed> {
        let function = match functions::lookup(name, args.len()) {
            Ok(f) => f,
            Err(err) => match crate::system::function(name, args.len()) {
                Some(f) => f,
                None => return Err(err),
            },
        };
        let mut bound = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for arg in args {
            let (expr, ty) = self.bind_expr(arg, scope)?;
            let expr = if name == "octet_length" {
                expr
            } else if JSON_BUILDERS.contains(&name) {
                array_as_json(expr, ty)
            } else if name == "array_to_string" {
                crate::system::arrays::shown_array(expr, ty)
            } else {
                char_as_text(expr, ty)
            };
            bound.push(expr);
            types.push(ty);
        }
        check_bytea_argument(name, &types)?;
        let ty = match name {
            "greatest" | "least" | "nullif" => {
                let common = common_type(types.iter().copied(), &name.to_uppercase())?;
                bound = bound
                    .into_iter()
                    .zip(&types)
                    .map(|(e, t)| self.coerce_branch(e, *t, common))
                    .collect::<Result<_>>()?;
                Some(common)
            }
            _ => (function.returns)(&types),
        };
        let expr = Expr::Call(function, bound);
        self.volatile_seen |= function.volatile;
        Ok((if function.volatile { expr } else { fold(expr)? }, ty))
    }

    pub(super) fn bind_coalesce(&mut self, args: &[&AstExpr], scope: &Scope) -> Result<Typed> {
        if args.is_empty() {
            return Err(SqlError::syntax("coalesce needs arguments"));
        }
        let mut bound = Vec::new();
        for arg in args {
            bound.push(self.bind_expr(arg, scope)?);
        }
        let ty = common_type(bound.iter().map(|(_, t)| *t), "COALESCE")?;
        let mut whens = Vec::new();
        let last = bound.pop();
        for (expr, t) in bound {
            let expr = self.coerce_branch(expr, t, ty)?;
            whens.push((not(Expr::IsNull(Box::new(expr.clone()))), expr));
        }
        let otherwise = last
            .map(|(e, t)| self.coerce_branch(e, t, ty))
            .transpose()?;
        Ok((
            Expr::Case {
                operand: None,
                whens,
                otherwise: otherwise.map(Box::new),
            },
            Some(ty),
        ))
    }

    pub(super) fn bind_aggregate(
        &mut self,
        func: AggFunc,
        function: &ast::Function,
        list: Option<&ast::FunctionArgumentList>,
        scope: &Scope,
    ) -> Result<Typed> {
        let Some(mut aggregates) = self.take_aggregates() else {
            return Err(SqlError::new(
                "42803",
                "aggregate functions are not allowed here",
            ));
        };
        let result = self.bind_aggregate_call(func, function, list, scope);
        let call = match result {
            Ok(call) => call,
            Err(err) => {
                self.restore_aggregates(Some(aggregates));
                return Err(err);
            }
        };
        let ty = call.ty;
        aggregates.push(call);
        let index = aggregates.len() - 1;
        self.restore_aggregates(Some(aggregates));
        Ok((Expr::AggRef(index), ty))
    }

    /// A row `(a, b, ...)` counted by `count`: its [`functions::ROW_KEY`], so that rows count
    /// once each (with DISTINCT, equal rows once).
    fn bind_row_key(&mut self, fields: Vec<&AstExpr>, scope: &Scope) -> Result<Typed> {
        let fields = fields
            .iter()
            .map(|field| {
                let (expr, ty) = self.bind_expr(field, scope)?;
                Ok(crate::system::arrays::ordered_array(expr, ty))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((
            Expr::Call(&functions::ROW_KEY, fields),
            Some(DataType::Bytea),
        ))
    }

    pub(crate) fn bind_aggregate_call(
        &mut self,
        func: AggFunc,
        function: &ast::Function,
        list: Option<&ast::FunctionArgumentList>,
        scope: &Scope,
    ) -> Result<AggCall> {
        if func.is_ordered_set() || !function.within_group.is_empty() {
            return self.bind_ordered_set_call(func, function, list, scope);
        }
        let distinct = list.is_some_and(|l| {
            matches!(
                l.duplicate_treatment,
                Some(ast::DuplicateTreatment::Distinct)
            )
        });
        let raw_args = list.map(|l| l.args.as_slice()).unwrap_or_default();
        let star = raw_args.is_empty()
            || matches!(
                raw_args,
                [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)]
            );
        if star {
            if func != AggFunc::Count {
                return Err(SqlError::syntax(format!("{}(*) is not valid", func.name())));
            }
            let filter = self.bind_filter(function, scope)?;
            return Ok(AggCall {
                func: AggFunc::CountStar,
                args: vec![],
                distinct: false,
                filter,
                order_by: vec![],
                ty: Some(DataType::BigInt),
            });
        }
        let mut args = Vec::new();
        let mut arg_type = None;
        for (i, arg) in raw_args.iter().enumerate() {
            let e = plain_arg(arg)?;
            let (expr, ty) = match func {
                AggFunc::StringAgg => self.bind_expr_as(e, scope, DataType::Text)?,
                AggFunc::Regression(_) => self.bind_regression_argument(func, e, scope)?,
                AggFunc::JsonAgg | AggFunc::JsonbAgg => {
                    let (expr, ty) = self.bind_expr(e, scope)?;
                    (array_as_json(expr, ty), ty)
                }
                AggFunc::Count => match row_fields(e) {
                    Some(fields) => self.bind_row_key(fields, scope)?,
                    None => self.bind_expr(e, scope)?,
                },
                _ => self.bind_expr(e, scope)?,
            };
            if i == 0 {
                arg_type = ty;
            }
            args.push(expr);
        }
        let expected = func.arity();
        let arity_fits = match func {
            AggFunc::Grouping => !args.is_empty(),
            _ => args.len() == expected,
        };
        if !arity_fits {
            return Err(SqlError::undefined_function(format!(
                "function {}() with {} arguments does not exist",
                func.name(),
                args.len()
            )));
        }
        let filter = self.bind_filter(function, scope)?;
        let mut order_by = Vec::new();
        for clause in list.map(|l| l.clauses.as_slice()).unwrap_or_default() {
            if let ast::FunctionArgumentClause::OrderBy(items) = clause {
                for item in items {
                    let (expr, _) = self.bind_expr(&item.expr, scope)?;
                    let descending = crate::planner::bind::sort_descending(&item.options)?;
                    order_by.push(SortKey {
                        expr,
                        descending,
                        nulls_first: item.options.nulls_first.unwrap_or(descending),
                    });
                }
            }
        }
        Ok(AggCall {
            func,
            ty: func.result_type(arg_type)?,
            args,
            distinct,
            filter,
            order_by,
        })
    }
}

impl Binder<'_> {
    /// An ordered-set aggregate: `percentile_cont(f)`, `percentile_disc(f)` or `mode()`, WITHIN
    /// GROUP (ORDER BY x). Its arguments are `[x, f…]` and its ORDER BY the WITHIN GROUP key, so
    /// the accumulator keeps the inputs sorted; the fraction `f` may not read the row (PostgreSQL
    /// also allows grouped columns there).
    fn bind_ordered_set_call(
        &mut self,
        func: AggFunc,
        function: &ast::Function,
        list: Option<&ast::FunctionArgumentList>,
        scope: &Scope,
    ) -> Result<AggCall> {
        if !func.is_ordered_set() {
            return Err(not_ordered_set(func.name()));
        }
        let [item] = function.within_group.as_slice() else {
            return Err(match function.within_group.len() {
                0 => SqlError::undefined_function(format!(
                    "WITHIN GROUP is required for ordered-set aggregate {}",
                    func.name()
                )),
                _ => SqlError::new(
                    "42809",
                    format!(
                        "WITHIN GROUP of {} takes exactly one ORDER BY item",
                        func.name()
                    ),
                ),
            });
        };
        let list = list.filter(|l| !l.args.is_empty());
        if list.is_some_and(|l| l.duplicate_treatment.is_some() || !l.clauses.is_empty()) {
            return Err(SqlError::unsupported(format!(
                "DISTINCT or ORDER BY in the arguments of {}",
                func.name()
            )));
        }
        let direct = list.map(|l| l.args.as_slice()).unwrap_or_default();
        if direct.len() != usize::from(func != AggFunc::Mode) {
            return Err(SqlError::undefined_function(format!(
                "function {}() with {} direct arguments does not exist",
                func.name(),
                direct.len()
            )));
        }
        let (sorted, sorted_type) = self.bind_expr(&item.expr, scope)?;
        let mut args = vec![sorted];
        let mut fractions_array = false;
        for arg in direct {
            let arg = plain_arg(arg)?;
            let (fraction, _) = match self.bind_expr(arg, scope)? {
                (array, Some(DataType::Array(_))) => {
                    fractions_array = true;
                    (array, None)
                }
                _ => self.bind_expr_as(arg, scope, DataType::Double)?,
            };
            if fraction.uses_columns() || fraction.holds_subquery() {
                return Err(SqlError::unsupported(format!(
                    "a fraction of {} that reads the row",
                    func.name()
                )));
            }
            args.push(fraction);
        }
        let filter = self.bind_filter(function, scope)?;
        let descending = crate::planner::bind::sort_descending(&item.options)?;
        let order_by = vec![SortKey {
            expr: args[0].clone(),
            descending,
            nulls_first: item.options.nulls_first.unwrap_or(descending),
        }];
        let ty = func.result_type(sorted_type)?;
        let ty = match (fractions_array, ty) {
            (false, ty) => ty,
            (true, Some(element)) => Some(element.array_type().ok_or_else(|| {
                SqlError::unsupported(format!("{}[] results of {}", element, func.name()))
            })?),
            (true, None) => None,
        };
        Ok(AggCall {
            func,
            ty,
            args,
            distinct: false,
            filter,
            order_by,
        })
    }
}

impl Binder<'_> {
    /// An aggregate call's FILTER (WHERE …) clause.
    fn bind_filter(&mut self, function: &ast::Function, scope: &Scope) -> Result<Option<Expr>> {
        function
            .filter
            .as_ref()
            .map(|f| self.bind_expr_as(f, scope, DataType::Boolean).map(|t| t.0))
            .transpose()
    }
}

/// The error for WITHIN GROUP on a function that is not an ordered-set aggregate.
fn not_ordered_set(name: &str) -> SqlError {
    SqlError::new(
        "42809",
        format!("{name} is not an ordered-set aggregate, so it cannot have WITHIN GROUP"),
    )
}

/// A call of a function with named parameters (`make_interval(days => 3)`) that names any: its
/// arguments in positional order, each missing one its default (0). None for other calls.
fn named_arguments(
    name: &str,
    list: Option<&ast::FunctionArgumentList>,
) -> Result<Option<Vec<AstExpr>>> {
    let Some(list) = list else {
        return Ok(None);
    };
    // `name => value`: sqlparser gives the name as an identifier or as an expression.
    let named = |arg: &ast::FunctionArg| -> Option<(ast::Ident, AstExpr)> {
        match arg {
            ast::FunctionArg::Named {
                name,
                arg: ast::FunctionArgExpr::Expr(expr),
                ..
            }
            | ast::FunctionArg::ExprNamed {
                name: AstExpr::Identifier(name),
                arg: ast::FunctionArgExpr::Expr(expr),
                ..
            } => Some((name.clone(), expr.clone())),
            _ => None,
        }
    };
    if !list.args.iter().any(|arg| named(arg).is_some()) {
        return Ok(None);
    }
    // Each function's parameter names, and how many of them a call must give (make_interval's
    // all default to 0; make_timestamptz's time zone defaults to the session's).
    let (parameters, required): (&[&str], usize) = match name {
        "make_interval" => (
            &crate::execution::datetime_functions::MAKE_INTERVAL_PARAMETERS,
            0,
        ),
        "make_date" => (&["year", "month", "day"], 3),
        "make_time" => (&["hour", "min", "sec"], 3),
        "make_timestamp" => (&["year", "month", "mday", "hour", "min", "sec"], 6),
        "make_timestamptz" => (
            &["year", "month", "mday", "hour", "min", "sec", "timezone"],
            6,
        ),
        _ => return Err(SqlError::unsupported(format!("named arguments of {name}"))),
    };
    let mut positional: Vec<Option<AstExpr>> = vec![None; parameters.len()];
    let mut seen_named = false;
    for (at, arg) in list.args.iter().enumerate() {
        let (slot, expr) = match (named(arg), arg) {
            (Some((parameter, expr)), _) => {
                seen_named = true;
                let parameter = crate::types::normalize_ident(&parameter);
                let slot = parameters
                    .iter()
                    .position(|p| *p == parameter)
                    .ok_or_else(|| {
                        SqlError::undefined_function(format!(
                            "function {name}({parameter} => ...) does not exist"
                        ))
                    })?;
                (slot, expr)
            }
            (None, ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(expr))) if !seen_named => {
                (at, expr.clone())
            }
            _ => {
                return Err(SqlError::syntax(
                    "positional argument cannot follow named argument",
                ))
            }
        };
        match positional.get_mut(slot) {
            Some(place @ None) => *place = Some(expr),
            _ => {
                return Err(SqlError::syntax(format!(
                    "argument name \"{}\" used more than once",
                    parameters.get(slot).copied().unwrap_or("?")
                )))
            }
        }
    }
    if required == 0 {
        let zero = || AstExpr::value(ast::Value::Number("0".to_owned(), false));
        return Ok(Some(
            positional
                .into_iter()
                .map(|e| e.unwrap_or_else(zero))
                .collect(),
        ));
    }
    let given = positional
        .iter()
        .rposition(Option::is_some)
        .map_or(0, |at| at + 1);
    positional.truncate(given.max(required));
    positional.into_iter().collect::<Option<Vec<_>>>().map(Some).ok_or_else(|| {
        SqlError::undefined_function(format!(
            "function {name}({}) does not exist",
            parameters[..required].join(", ")
        ))
        .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.")
    })
}

pub(crate) fn plain_arg(arg: &ast::FunctionArg) -> Result<&AstExpr> {
    match arg {
        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
        _ => Err(SqlError::unsupported("this function argument")),
    }
}

/// The functions whose first argument is a binary string: bytea, or an untyped literal (read as a
/// bytea literal when the call runs); PostgreSQL has no form of them for text or other types.
/// The functions that make json of their arguments: an array argument becomes a json array
/// ([`array_as_json`]), not the string of its text.
const JSON_BUILDERS: [&str; 6] = [
    "to_json",
    "to_jsonb",
    "json_build_object",
    "jsonb_build_object",
    "json_build_array",
    "jsonb_build_array",
];

const BYTEA_FIRST_ARGUMENT: [&str; 2] = ["encode", "convert_from"];

/// 42883, as PostgreSQL, for a call of a [`BYTEA_FIRST_ARGUMENT`] function whose first argument
/// has a type other than bytea (a text column, `'x'::text`, an integer).
fn check_bytea_argument(name: &str, types: &[Option<DataType>]) -> Result<()> {
    let typed_otherwise = types
        .first()
        .copied()
        .flatten()
        .is_some_and(|ty| ty != DataType::Bytea);
    if !BYTEA_FIRST_ARGUMENT.contains(&name) || !typed_otherwise {
        return Ok(());
    }
    Err(no_such_function(name, types))
}

/// 42883 for a call of `name` with arguments of `types`, worded as PostgreSQL words it
/// (`function enum_first(integer) does not exist`).
fn no_such_function(name: &str, types: &[Option<DataType>]) -> SqlError {
    let names: Vec<String> = types
        .iter()
        .map(|&ty| crate::types::type_name(ty))
        .collect();
    SqlError::undefined_function(format!(
        "function {name}({}) does not exist",
        names.join(", ")
    ))
}

/// The fields of a row constructor, `(a, b, ...)` or `ROW(a, ...)`; None for another expression.
fn row_fields(expr: &AstExpr) -> Option<Vec<&AstExpr>> {
    match expr {
        AstExpr::Tuple(fields) => Some(fields.iter().collect()),
        AstExpr::Function(call) if object_name(&call.name).1 == "row" => match &call.args {
            ast::FunctionArguments::List(list) => list
                .args
                .iter()
                .map(|arg| match arg {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
                    _ => None,
                })
                .collect(),
            _ => None,
        },
        _ => None,
    }
}
