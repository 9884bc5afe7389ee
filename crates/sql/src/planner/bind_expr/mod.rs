//! Binding of scalar expressions (part of [`crate::planner::bind::Binder`]): names, literals, operators,
//! functions, aggregates, casts and subqueries, each with its result type.
//!
//! Untyped string literals and parameters take the type of the other operand (`unknown` in
//! PostgreSQL); the result is `None` only for such untyped values and NULL.

pub(crate) mod call;

use sqlparser::ast::{self, BinaryOperator, Expr as AstExpr, UnaryOperator};
use steady_types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::aggregate::{AggCall, AggFunc};
use crate::execution::expr::{Expr, Subquery, SubqueryKind};
use crate::execution::functions;
use crate::execution::plan::{Plan, SortKey};
use crate::execution::set_functions::{SetCall, SetFunction};
use crate::planner::bind::{coerce_to, Binder, Scope, Typed};
use crate::planner::binding;
use crate::system::arrays::ordered_array;
use crate::types::ops::{self, ArithOp, Category, CmpOp};
use crate::types::{convert_type_in, normalize_ident, object_name, parse_number};

impl Binder<'_> {
    /// Binds an expression and coerces it to `ty` (for LIMIT, assignments and the like).
    pub fn bind_expr_as(&mut self, e: &AstExpr, scope: &Scope, ty: DataType) -> Result<Typed> {
        let (expr, from) = self.bind_expr(e, scope)?;
        Ok((coerce_to(expr, from, ty)?, Some(ty)))
    }

    /// Binds an expression over `scope` (the current level's input row).
    pub fn bind_expr(&mut self, e: &AstExpr, scope: &Scope) -> Result<Typed> {
        if self.expression_columns {
            if let Some(column) = expression_column_of(e, scope) {
                return Ok(column);
            }
        }
        match e {
            AstExpr::Identifier(ident) => self.resolve(None, &normalize_ident(ident), scope),
            AstExpr::CompoundIdentifier(parts) => {
                let names: Vec<String> = parts.iter().map(normalize_ident).collect();
                match names.as_slice() {
                    [table, column] => self.resolve(Some(table), column, scope),
                    [_, table, column] => self.resolve(Some(table), column, scope),
                    _ => Err(SqlError::syntax(format!("improper qualified name: {e}"))),
                }
            }
            AstExpr::Value(v) => self.bind_literal(&v.value),
            AstExpr::TypedString(t) => {
                let ty = convert_type_in(&t.data_type, self.engine)?;
                let text = literal_text(&t.value.value)?;
                Ok((Expr::Literal(Value::parse(&ty, &text)?), Some(ty)))
            }
            AstExpr::Interval(interval) => interval_literal(interval),
            AstExpr::Nested(inner) => self.bind_expr(inner, scope),
            AstExpr::IsNull(inner) => {
                let (expr, _) = self.bind_expr(inner, scope)?;
                Ok((Expr::IsNull(Box::new(expr)), Some(DataType::Boolean)))
            }
            AstExpr::IsNotNull(inner) => {
                let (expr, _) = self.bind_expr(inner, scope)?;
                Ok((not(Expr::IsNull(Box::new(expr))), Some(DataType::Boolean)))
            }
            AstExpr::IsTrue(inner) => self.bind_is_bool(inner, scope, true, false),
            AstExpr::IsNotTrue(inner) => self.bind_is_bool(inner, scope, true, true),
            AstExpr::IsFalse(inner) => self.bind_is_bool(inner, scope, false, false),
            AstExpr::IsNotFalse(inner) => self.bind_is_bool(inner, scope, false, true),
            AstExpr::IsUnknown(inner) => {
                let (expr, _) = self.bind_expr_as(inner, scope, DataType::Boolean)?;
                Ok((Expr::IsNull(Box::new(expr)), Some(DataType::Boolean)))
            }
            AstExpr::IsNotUnknown(inner) => {
                let (expr, _) = self.bind_expr_as(inner, scope, DataType::Boolean)?;
                Ok((not(Expr::IsNull(Box::new(expr))), Some(DataType::Boolean)))
            }
            AstExpr::IsDistinctFrom(a, b) => {
                let (a, b) = self.bind_comparable(a, b, scope, "IS DISTINCT FROM")?;
                Ok((
                    Expr::IsDistinct(Box::new(a), Box::new(b)),
                    Some(DataType::Boolean),
                ))
            }
            AstExpr::IsNotDistinctFrom(a, b) => {
                let (a, b) = self.bind_comparable(a, b, scope, "IS NOT DISTINCT FROM")?;
                Ok((
                    not(Expr::IsDistinct(Box::new(a), Box::new(b))),
                    Some(DataType::Boolean),
                ))
            }
            AstExpr::InList {
                expr,
                list,
                negated,
            } => self.bind_in_list(expr, list, *negated, scope),
            AstExpr::InSubquery {
                expr,
                subquery,
                negated,
            } => self.bind_in_subquery(expr, subquery, *negated, scope),
            AstExpr::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let between = match symmetric_bound(low)? {
                    // PostgreSQL's reading: (x >= a AND x <= b) OR (x >= b AND x <= a).
                    Some(low) => Expr::Or(
                        Box::new(self.bind_between(expr, low, high, scope)?),
                        Box::new(self.bind_between(expr, high, low, scope)?),
                    ),
                    None => self.bind_between(expr, low, high, scope)?,
                };
                Ok((negate_if(between, *negated), Some(DataType::Boolean)))
            }
            AstExpr::BinaryOp { left, op, right } => self.bind_binary(left, op, right, scope),
            AstExpr::SimilarTo {
                negated,
                expr,
                pattern,
                escape_char,
            } => self.bind_similar_to(expr, pattern, escape_char.as_deref(), *negated, scope),
            AstExpr::Like {
                negated,
                expr,
                pattern,
                escape_char,
                any: false,
            } => self.bind_like(
                expr,
                pattern,
                escape_char.as_deref(),
                *negated,
                false,
                scope,
            ),
            AstExpr::ILike {
                negated,
                expr,
                pattern,
                escape_char,
                any: false,
            } => self.bind_like(expr, pattern, escape_char.as_deref(), *negated, true, scope),
            AstExpr::UnaryOp { op, expr } => self.bind_unary(op, expr, scope),
            AstExpr::Cast {
                expr, data_type, ..
            } => self.bind_cast(expr, data_type, scope),
            AstExpr::Collate { expr, .. } => self.bind_expr(expr, scope),
            AstExpr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.bind_case(
                operand.as_deref(),
                conditions,
                else_result.as_deref(),
                scope,
            ),
            AstExpr::Function(function) => self.bind_function(function, scope),
            AstExpr::Exists { subquery, negated } => {
                let (plan, correlated) = self.bind_subquery_plan(subquery)?;
                let sub = self.subquery(plan, SubqueryKind::Exists, correlated);
                Ok((negate_if(sub, *negated), Some(DataType::Boolean)))
            }
            AstExpr::Subquery(query) => {
                let (bound, correlated) = self.bind_subquery_full(query)?;
                if bound.columns.len() != 1 {
                    return Err(SqlError::syntax("subquery must return only one column"));
                }
                let ty = bound.columns[0].ty;
                Ok((
                    self.subquery(bound.plan, SubqueryKind::Scalar, correlated),
                    ty,
                ))
            }
            AstExpr::AtTimeZone {
                timestamp,
                time_zone,
            } => self.bind_at_time_zone(timestamp, time_zone, scope),
            AstExpr::Extract { field, expr, .. } => {
                let (arg, _) = self.bind_expr(expr, scope)?;
                let field = Expr::Literal(Value::Text(field.to_string().to_lowercase()));
                let f = functions::lookup("extract", 2)?;
                Ok((Expr::Call(f, vec![field, arg]), Some(numeric())))
            }
            AstExpr::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let (string, string_type) = self.bind_expr(expr, scope)?;
                let bytes = string_type == Some(DataType::Bytea);
                let result_type = if bytes {
                    DataType::Bytea
                } else {
                    DataType::Text
                };
                let mut args = vec![coerce_to(string, string_type, result_type)?];
                let from = substring_from.as_deref();
                if let (Some(pattern), None, false) = (from, substring_for, bytes) {
                    let (pattern, ty) = self.bind_expr(pattern, scope)?;
                    let text_like = |t: DataType| ops::category(&t) == Category::String;
                    if ty.is_none_or(text_like) {
                        args.push(self.settle(pattern, ty, DataType::Text)?);
                        let f = &crate::system::functions::SUBSTRING_REGEX;
                        return Ok((Expr::Call(f, args), Some(DataType::Text)));
                    }
                }
                let start = match from {
                    Some(f) => self.bind_expr_as(f, scope, DataType::Integer)?.0,
                    None => Expr::Literal(Value::Integer(1)),
                };
                args.push(start);
                if let Some(count) = substring_for {
                    args.push(self.bind_expr_as(count, scope, DataType::Integer)?.0);
                }
                let f = functions::lookup("substr", args.len())?;
                Ok((Expr::Call(f, args), Some(result_type)))
            }
            AstExpr::Overlay {
                expr,
                overlay_what,
                overlay_from,
                overlay_for,
            } => {
                let mut args = vec![
                    self.bind_expr_as(expr, scope, DataType::Text)?.0,
                    self.bind_expr_as(overlay_what, scope, DataType::Text)?.0,
                    self.bind_expr_as(overlay_from, scope, DataType::Integer)?.0,
                ];
                if let Some(count) = overlay_for {
                    args.push(self.bind_expr_as(count, scope, DataType::Integer)?.0);
                }
                let f = functions::lookup("overlay", args.len())?;
                Ok((Expr::Call(f, args), Some(DataType::Text)))
            }
            AstExpr::Trim {
                expr,
                trim_where,
                trim_what,
                trim_characters,
            } => {
                let name = match trim_where {
                    Some(ast::TrimWhereField::Leading) => "ltrim",
                    Some(ast::TrimWhereField::Trailing) => "rtrim",
                    _ => "btrim",
                };
                let mut args = vec![self.bind_expr_as(expr, scope, DataType::Text)?.0];
                if let Some(what) = trim_what {
                    args.push(self.bind_expr_as(what, scope, DataType::Text)?.0);
                } else if let Some(chars) = trim_characters.as_ref().and_then(|c| c.first()) {
                    args.push(self.bind_expr_as(chars, scope, DataType::Text)?.0);
                }
                let f = functions::lookup(name, args.len())?;
                Ok((Expr::Call(f, args), Some(DataType::Text)))
            }
            AstExpr::Position { expr, r#in } => {
                let needle = self.bind_expr_as(expr, scope, DataType::Text)?.0;
                let haystack = self.bind_expr_as(r#in, scope, DataType::Text)?.0;
                let f = functions::lookup("strpos", 2)?;
                Ok((
                    Expr::Call(f, vec![haystack, needle]),
                    Some(DataType::Integer),
                ))
            }
            AstExpr::Ceil { expr, .. } => self.bind_call("ceil", &[expr], scope),
            AstExpr::Floor { expr, .. } => self.bind_call("floor", &[expr], scope),
            AstExpr::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => match right.as_ref() {
                AstExpr::Subquery(_) => self.bind_quantified(left, compare_op, right, false, scope),
                _ => binding::bind_any_array(self, left, compare_op, right, false, scope),
            },
            AstExpr::AllOp {
                left,
                compare_op,
                right,
            } => match right.as_ref() {
                AstExpr::Subquery(_) => self.bind_quantified(left, compare_op, right, true, scope),
                _ => binding::bind_any_array(self, left, compare_op, right, true, scope),
            },
            AstExpr::Array(array) => {
                crate::planner::binding::bind_array_constructor(self, array, scope)
            }
            AstExpr::CompoundFieldAccess { root, access_chain } => {
                crate::planner::binding::bind_subscript(self, root, access_chain, scope)
            }
            AstExpr::Tuple(_) => Err(SqlError::unsupported(
                "row constructors outside a row comparison",
            )),
            other => Err(SqlError::unsupported(format!("expression {other}"))),
        }
    }

    /// Resolves a column name: the current level first, then enclosing levels.
    fn resolve(&mut self, table: Option<&str>, name: &str, scope: &Scope) -> Result<Typed> {
        if let Some(i) = scope.find(table, name)? {
            return Ok((Expr::Column(i), scope.columns[i].ty));
        }
        let current = self.scopes.len();
        for level in (0..current.saturating_sub(1)).rev() {
            if let Some(i) = self.scopes[level].find(table, name)? {
                let ty = self.scopes[level].columns[i].ty;
                for flag in self.correlated.iter_mut().skip(level + 1) {
                    *flag = true;
                }
                let depth = current - 1 - level;
                return Ok((Expr::Outer { depth, index: i }, ty));
            }
        }
        if table.is_none() {
            if let Some(value) = special_identifier(name) {
                return Ok(value);
            }
        }
        Err(match table {
            Some(t) if !scope.columns.iter().any(|c| c.table.as_deref() == Some(t)) => {
                SqlError::new(
                    "42P01",
                    format!("missing FROM-clause entry for table \"{t}\""),
                )
            }
            Some(t) => SqlError::undefined_column(&format!("{t}.{name}")),
            None => SqlError::undefined_column(name),
        })
    }

    fn bind_literal(&mut self, value: &ast::Value) -> Result<Typed> {
        Ok(match value {
            ast::Value::Number(n, _) => {
                let v = parse_number(n)?;
                let ty = v.data_type();
                (Expr::Literal(v), ty)
            }
            ast::Value::Boolean(b) => (Expr::Literal(Value::Boolean(*b)), Some(DataType::Boolean)),
            ast::Value::Null => (Expr::Literal(Value::Null), None),
            ast::Value::Placeholder(p) => self.bind_param(p)?,
            other => (Expr::Literal(Value::Text(literal_text(other)?)), None),
        })
    }

    fn bind_param(&mut self, placeholder: &str) -> Result<Typed> {
        let index: usize = placeholder
            .strip_prefix('$')
            .and_then(|n| n.parse().ok())
            .filter(|n| *n >= 1)
            .ok_or_else(|| SqlError::syntax(format!("invalid parameter {placeholder}")))?;
        if self.params.len() < index {
            self.params.resize(index, None);
        }
        let ty = self.params[index - 1];
        Ok((
            Expr::Param {
                index: index - 1,
                ty,
            },
            ty,
        ))
    }

    /// Coerces an expression to `target`, recording the type of an untyped parameter from its
    /// context (a comparison's other side, the column it is assigned to).
    pub(crate) fn settle(
        &mut self,
        expr: Expr,
        ty: Option<DataType>,
        target: DataType,
    ) -> Result<Expr> {
        if let (Expr::Param { index, ty: None }, None) = (&expr, ty) {
            self.params[*index] = Some(target);
        }
        coerce_to(expr, ty, target)
    }

    /// Binds two operands that must be comparable, coercing an untyped one to the other's type.
    pub fn bind_comparable(
        &mut self,
        a: &AstExpr,
        b: &AstExpr,
        scope: &Scope,
        op: &str,
    ) -> Result<(Expr, Expr)> {
        let (a, at) = self.bind_expr(a, scope)?;
        let (b, bt) = self.bind_expr(b, scope)?;
        self.unify(a, at, b, bt, op).map(|(a, b, _)| (a, b))
    }

    /// Brings two operands to comparable types: returns them and the common type.
    pub(crate) fn unify(
        &mut self,
        a: Expr,
        at: Option<DataType>,
        b: Expr,
        bt: Option<DataType>,
        op: &str,
    ) -> Result<(Expr, Expr, Option<DataType>)> {
        match (at, bt) {
            (Some(t), None) => Ok((a, self.settle(b, None, t)?, Some(t))),
            (None, Some(t)) => Ok((self.settle(a, None, t)?, b, Some(t))),
            (None, None) => {
                let a = self.settle(a, None, DataType::Text)?;
                let b = self.settle(b, None, DataType::Text)?;
                Ok((a, b, Some(DataType::Text)))
            }
            (Some(x), Some(y)) if comparable(&x, &y) => Ok((a, b, Some(x))),
            (Some(x), Some(y)) => Err(SqlError::no_operator(&x, &op, &y)),
        }
    }

    fn bind_is_bool(
        &mut self,
        e: &AstExpr,
        scope: &Scope,
        want: bool,
        negated: bool,
    ) -> Result<Typed> {
        let (expr, _) = self.bind_expr_as(e, scope, DataType::Boolean)?;
        let test = Expr::IsBool(Box::new(expr), want);
        Ok((negate_if(test, negated), Some(DataType::Boolean)))
    }

    fn bind_in_list(
        &mut self,
        e: &AstExpr,
        list: &[AstExpr],
        negated: bool,
        scope: &Scope,
    ) -> Result<Typed> {
        if let AstExpr::Tuple(lefts) = e {
            return self.bind_row_in_list(lefts, list, negated, scope);
        }
        let (mut needle, mut ty) = self.bind_expr(e, scope)?;
        let mut items = Vec::with_capacity(list.len());
        for item in list {
            let (item, item_ty) = self.bind_expr(item, scope)?;
            let (n, i, common) = self.unify(needle, ty, item, item_ty, "=")?;
            needle = n;
            ty = common;
            items.push(i);
        }
        let expr = Expr::InList {
            expr: Box::new(needle),
            list: items,
        };
        Ok((negate_if(expr, negated), Some(DataType::Boolean)))
    }

    /// `(a, b) IN ((1, 2), (3, 4))`: the row equal to one of the rows, as `(a, b) = (1, 2) OR
    /// (a, b) = (3, 4)` (SQL's definition, NULLs included).
    fn bind_row_in_list(
        &mut self,
        lefts: &[AstExpr],
        list: &[AstExpr],
        negated: bool,
        scope: &Scope,
    ) -> Result<Typed> {
        let mut any = None;
        for item in list {
            let AstExpr::Tuple(rights) = item else {
                return Err(SqlError::undefined_function(format!(
                    "operator does not exist: record = {item}"
                )));
            };
            let (equal, _) = self.bind_row_comparison(CmpOp::Eq, lefts, rights, scope)?;
            any = Some(match any {
                None => equal,
                Some(before) => Expr::Or(Box::new(before), Box::new(equal)),
            });
        }
        let any = any.unwrap_or(Expr::Literal(Value::Boolean(false)));
        Ok((negate_if(any, negated), Some(DataType::Boolean)))
    }

    /// `(a, b) IN (SELECT x, y …)`: each needle coerced to its column's type.
    fn bind_row_in_subquery(
        &mut self,
        lefts: &[AstExpr],
        query: &ast::Query,
        negated: bool,
        scope: &Scope,
    ) -> Result<Typed> {
        let (bound, correlated) = self.bind_subquery_full(query)?;
        if bound.columns.len() != lefts.len() {
            let problem = if bound.columns.len() > lefts.len() {
                "subquery has too many columns"
            } else {
                "subquery has too few columns"
            };
            return Err(SqlError::syntax(problem));
        }
        let mut needles = Vec::with_capacity(lefts.len());
        for (left, column) in lefts.iter().zip(&bound.columns) {
            let (needle, ty) = self.bind_expr(left, scope)?;
            let null = Expr::Literal(Value::Null);
            needles.push(self.unify(needle, ty, null, column.ty, "=")?.0);
        }
        let sub = self.subquery(bound.plan, SubqueryKind::InRow(needles), correlated);
        Ok((negate_if(sub, negated), Some(DataType::Boolean)))
    }

    fn bind_in_subquery(
        &mut self,
        e: &AstExpr,
        query: &ast::Query,
        negated: bool,
        scope: &Scope,
    ) -> Result<Typed> {
        if let AstExpr::Tuple(lefts) = e {
            return self.bind_row_in_subquery(lefts, query, negated, scope);
        }
        let (needle, plan, correlated) = self.bind_compared_subquery(e, query, "=", scope)?;
        let sub = self.subquery(plan, SubqueryKind::In(Box::new(needle)), correlated);
        Ok((negate_if(sub, negated), Some(DataType::Boolean)))
    }

    /// `left op ANY/ALL (subquery)`.
    fn bind_quantified(
        &mut self,
        left: &AstExpr,
        op: &BinaryOperator,
        right: &AstExpr,
        all: bool,
        scope: &Scope,
    ) -> Result<Typed> {
        let AstExpr::Subquery(query) = right else {
            return Err(SqlError::unsupported("ANY/ALL over a non-subquery"));
        };
        let op = comparison(op).ok_or_else(|| SqlError::unsupported(format!("{op} ANY/ALL")))?;
        let (needle, plan, correlated) =
            self.bind_compared_subquery(left, query, op.symbol(), scope)?;
        let kind = SubqueryKind::Quantified {
            expr: Box::new(needle),
            op,
            all,
        };
        Ok((
            self.subquery(plan, kind, correlated),
            Some(DataType::Boolean),
        ))
    }

    /// `e` compared by `op` with the one column of `query`: the operand coerced to the column's
    /// type, the subquery's plan, and whether it is correlated.
    fn bind_compared_subquery(
        &mut self,
        e: &AstExpr,
        query: &ast::Query,
        op: &str,
        scope: &Scope,
    ) -> Result<(Expr, Plan, bool)> {
        let (needle, ty) = self.bind_expr(e, scope)?;
        let (bound, correlated) = self.bind_subquery_full(query)?;
        if bound.columns.len() != 1 {
            return Err(SqlError::syntax("subquery has too many columns"));
        }
        let column_ty = bound.columns[0].ty;
        let (needle, _, _) = self.unify(needle, ty, Expr::Literal(Value::Null), column_ty, op)?;
        // An untyped column (`unnest(arr)`, `arr[i]`) takes the operand's type, as an untyped
        // literal would: compared as text with a number it would never be equal.
        let plan = match (column_ty, ty) {
            (None, Some(target)) => Plan::Project {
                input: Box::new(bound.plan),
                exprs: vec![coerce_to(Expr::Column(0), None, target)?],
            },
            _ => bound.plan,
        };
        Ok((needle, plan, correlated))
    }

    fn bind_subquery_full(
        &mut self,
        query: &ast::Query,
    ) -> Result<(crate::planner::bind::BoundQuery, bool)> {
        let saved = self.take_aggregates();
        let result = self.bind_subquery(query);
        self.restore_aggregates(saved);
        result
    }

    fn bind_subquery_plan(
        &mut self,
        query: &ast::Query,
    ) -> Result<(crate::execution::plan::Plan, bool)> {
        self.bind_subquery_full(query).map(|(b, c)| (b.plan, c))
    }

    fn subquery(
        &mut self,
        plan: crate::execution::plan::Plan,
        kind: SubqueryKind,
        correlated: bool,
    ) -> Expr {
        let id = self.next_subquery_id();
        Expr::Subquery(Box::new(Subquery {
            id,
            plan,
            kind,
            correlated,
        }))
    }

    /// `x >= low AND x <= high`.
    fn bind_between(
        &mut self,
        expr: &AstExpr,
        low: &AstExpr,
        high: &AstExpr,
        scope: &Scope,
    ) -> Result<Expr> {
        let (e1, l) = self.bind_comparable(expr, low, scope, ">=")?;
        let (e2, h) = self.bind_comparable(expr, high, scope, "<=")?;
        Ok(Expr::And(
            Box::new(Expr::Compare(CmpOp::GtEq, Box::new(e1), Box::new(l))),
            Box::new(Expr::Compare(CmpOp::LtEq, Box::new(e2), Box::new(h))),
        ))
    }

    fn bind_binary(
        &mut self,
        left: &AstExpr,
        op: &BinaryOperator,
        right: &AstExpr,
        scope: &Scope,
    ) -> Result<Typed> {
        if let Some(cmp) = comparison(op) {
            if let (AstExpr::Tuple(lefts), AstExpr::Tuple(rights)) = (left, right) {
                return self.bind_row_comparison(cmp, lefts, rights, scope);
            }
            let (a, at) = self.bind_expr(left, scope)?;
            let (b, bt) = self.bind_expr(right, scope)?;
            let (a, b, ty) = self.unify(a, at, b, bt, cmp.symbol())?;
            let (a, b) = (ordered_array(a, ty), ordered_array(b, ty));
            return Ok((
                Expr::Compare(cmp, Box::new(a), Box::new(b)),
                Some(DataType::Boolean),
            ));
        }
        let arith = match op {
            BinaryOperator::Plus => ArithOp::Add,
            BinaryOperator::Minus => ArithOp::Sub,
            BinaryOperator::Multiply => ArithOp::Mul,
            BinaryOperator::Divide => ArithOp::Div,
            BinaryOperator::Modulo => ArithOp::Mod,
            BinaryOperator::StringConcat => ArithOp::Concat,
            BinaryOperator::And | BinaryOperator::Or => {
                let (a, _) = self.bind_expr_as(left, scope, DataType::Boolean)?;
                let (b, _) = self.bind_expr_as(right, scope, DataType::Boolean)?;
                let (a, b) = (Box::new(a), Box::new(b));
                let expr = if *op == BinaryOperator::And {
                    Expr::And(a, b)
                } else {
                    Expr::Or(a, b)
                };
                return Ok((expr, Some(DataType::Boolean)));
            }
            BinaryOperator::PGLikeMatch
            | BinaryOperator::PGNotLikeMatch
            | BinaryOperator::PGILikeMatch
            | BinaryOperator::PGNotILikeMatch => {
                let negated = matches!(
                    op,
                    BinaryOperator::PGNotLikeMatch | BinaryOperator::PGNotILikeMatch
                );
                let case_insensitive = matches!(
                    op,
                    BinaryOperator::PGILikeMatch | BinaryOperator::PGNotILikeMatch
                );
                return self.bind_like(left, right, None, negated, case_insensitive, scope);
            }
            BinaryOperator::PGExp => return self.bind_call("power", &[left, right], scope),
            BinaryOperator::PGStartsWith => {
                return self.bind_call("starts_with", &[left, right], scope)
            }
            other if crate::execution::bitwise::operator(other).is_some() => {
                return self.bind_bitwise(left, other, right, scope)
            }
            BinaryOperator::PGOverlap => {
                let left = self.bind_expr(left, scope)?;
                let right = self.bind_expr(right, scope)?;
                return binding::bind_array_set_operator(self, "&&", left, right);
            }
            other if crate::planner::json::is_json_operator(other) => {
                return crate::planner::json::bind_json_operator(self, left, other, right, scope)
            }
            other => return self.bind_other_operator(left, other, right, scope),
        };
        let (a, at) = self.bind_expr(left, scope)?;
        let (b, bt) = self.bind_expr(right, scope)?;
        if arith == ArithOp::Concat {
            if let Some(array) = crate::planner::binding::array_concat((&a, at), (&b, bt))? {
                return Ok(array);
            }
        }
        if crate::planner::json::is_jsonb_arith(arith, at, bt)? {
            return crate::planner::json::bind_jsonb_arith(self, arith, (a, at), (b, bt));
        }
        self.bind_arith(arith, a, at, b, bt)
    }

    /// `s [NOT] SIMILAR TO pattern [ESCAPE e]`: `s ~ similar_to_escape(pattern, e)`, as
    /// PostgreSQL rewrites it.
    fn bind_similar_to(
        &mut self,
        expr: &AstExpr,
        pattern: &AstExpr,
        escape: Option<&AstExpr>,
        negated: bool,
        scope: &Scope,
    ) -> Result<Typed> {
        let (subject, _) = self.bind_expr_as(expr, scope, DataType::Text)?;
        let mut escape_args = vec![self.bind_expr_as(pattern, scope, DataType::Text)?.0];
        if let Some(escape) = escape {
            escape_args.push(self.bind_expr_as(escape, scope, DataType::Text)?.0);
        }
        let regex = Expr::Call(
            functions::lookup("similar_to_escape", escape_args.len())?,
            escape_args,
        );
        let matched = Expr::Call(&crate::system::functions::REGEX_MATCH, vec![subject, regex]);
        let expr = if negated {
            Expr::Not(Box::new(matched))
        } else {
            matched
        };
        Ok((fold(expr)?, Some(DataType::Boolean)))
    }

    /// `&`, `|`, `#`, `<<` and `>>` of integers ([`crate::execution::bitwise`]); an untyped
    /// operand takes the other's type.
    fn bind_bitwise(
        &mut self,
        left: &AstExpr,
        op: &BinaryOperator,
        right: &AstExpr,
        scope: &Scope,
    ) -> Result<Typed> {
        let (function, shift) =
            crate::execution::bitwise::operator(op).expect("a bitwise operator");
        let (a, at) = self.bind_expr(left, scope)?;
        let (b, bt) = self.bind_expr(right, scope)?;
        let (at, bt) = match (at, bt) {
            (Some(t), None) => (t, if shift { DataType::Integer } else { t }),
            (None, Some(t)) => (if shift { DataType::Integer } else { t }, t),
            (None, None) => (DataType::Integer, DataType::Integer),
            (Some(a), Some(b)) => (a, b),
        };
        let integer = crate::execution::bitwise::is_integer;
        if !integer(at) || !integer(bt) {
            return Err(SqlError::no_operator(&at, &op.to_string(), &bt));
        }
        let (a, b) = (coerce_to(a, None, at)?, coerce_to(b, None, bt)?);
        let ty = if shift {
            at
        } else {
            crate::execution::bitwise::wider_of(at, bt)
        };
        Ok((Expr::Call(function, vec![a, b]), Some(ty)))
    }

    /// Operators beyond arithmetic and comparison (regular expressions), from the system module.
    fn bind_other_operator(
        &mut self,
        left: &AstExpr,
        op: &BinaryOperator,
        right: &AstExpr,
        scope: &Scope,
    ) -> Result<Typed> {
        let name = crate::system::operator_function(op)
            .ok_or_else(|| SqlError::unsupported(format!("operator {op}")))?;
        self.bind_call(name, &[left, right], scope)
    }

    fn bind_arith(
        &mut self,
        op: ArithOp,
        a: Expr,
        at: Option<DataType>,
        b: Expr,
        bt: Option<DataType>,
    ) -> Result<Typed> {
        let (a, at, b, bt) = match (at, bt) {
            (Some(t), None) if op != ArithOp::Concat => {
                let t = if matches!(t, DataType::Date) {
                    DataType::Integer
                } else {
                    t
                };
                (a, Some(t), self.settle(b, None, t)?, Some(t))
            }
            (None, Some(t)) if op != ArithOp::Concat => {
                (self.settle(a, None, t)?, Some(t), b, Some(t))
            }
            (None, None) if op != ArithOp::Concat => {
                let a = self.settle(a, None, DataType::Integer)?;
                let b = self.settle(b, None, DataType::Integer)?;
                (a, Some(DataType::Integer), b, Some(DataType::Integer))
            }
            (at, bt) => {
                let a = char_as_text(self.settle(a, at, DataType::Text)?, at);
                let b = char_as_text(self.settle(b, bt, DataType::Text)?, bt);
                (
                    a,
                    at.or(Some(DataType::Text)),
                    b,
                    bt.or(Some(DataType::Text)),
                )
            }
        };
        let (lt, rt) = (at.unwrap_or(DataType::Text), bt.unwrap_or(DataType::Text));
        let ty = ops::arith_type(op, &lt, &rt)
            .ok_or_else(|| SqlError::no_operator(&lt, &op.symbol(), &rt))?;
        let expr = Expr::Arith(op, Box::new(a), Box::new(b));
        Ok((fold(expr)?, Some(ty)))
    }

    /// `(a1, a2, ...) op (b1, b2, ...)`, as PostgreSQL compares rows: `=` when every pair is
    /// equal, `<>` when some pair differs, and the ordering operators pair by pair from the left,
    /// decided by the first pair that is not equal (NULL if that pair holds a NULL) — written as
    /// `a1 < b1 OR (a1 = b1 AND (... an <= bn))`, which gives the same three-valued answers.
    fn bind_row_comparison(
        &mut self,
        cmp: CmpOp,
        lefts: &[AstExpr],
        rights: &[AstExpr],
        scope: &Scope,
    ) -> Result<Typed> {
        if lefts.len() != rights.len() {
            return Err(SqlError::syntax(
                "unequal number of entries in row expressions",
            ));
        }
        let mut pairs = Vec::with_capacity(lefts.len());
        for (left, right) in lefts.iter().zip(rights) {
            pairs.push(self.bind_comparable(left, right, scope, cmp.symbol())?);
        }
        let compare = |op: CmpOp, (a, b): &(Expr, Expr)| {
            Expr::Compare(op, Box::new(a.clone()), Box::new(b.clone()))
        };
        let boolean = Some(DataType::Boolean);
        let combine = |join: fn(Box<Expr>, Box<Expr>) -> Expr, op: CmpOp| {
            pairs
                .iter()
                .map(|pair| compare(op, pair))
                .reduce(|a, b| join(Box::new(a), Box::new(b)))
        };
        let strict = match cmp {
            CmpOp::Eq => {
                return Ok((
                    combine(Expr::And, CmpOp::Eq).unwrap_or(Expr::Literal(Value::Boolean(true))),
                    boolean,
                ))
            }
            CmpOp::NotEq => {
                return Ok((
                    combine(Expr::Or, CmpOp::NotEq).unwrap_or(Expr::Literal(Value::Boolean(false))),
                    boolean,
                ))
            }
            CmpOp::Lt | CmpOp::LtEq => CmpOp::Lt,
            CmpOp::Gt | CmpOp::GtEq => CmpOp::Gt,
        };
        let Some((last, leading)) = pairs.split_last() else {
            return Err(SqlError::syntax(
                "a row comparison needs at least one column",
            ));
        };
        let mut expr = compare(cmp, last);
        for pair in leading.iter().rev() {
            expr = Expr::Or(
                Box::new(compare(strict, pair)),
                Box::new(Expr::And(
                    Box::new(compare(CmpOp::Eq, pair)),
                    Box::new(expr),
                )),
            );
        }
        Ok((expr, boolean))
    }

    fn bind_like(
        &mut self,
        e: &AstExpr,
        pattern: &AstExpr,
        escape: Option<&AstExpr>,
        negated: bool,
        case_insensitive: bool,
        scope: &Scope,
    ) -> Result<Typed> {
        let (expr, ty) = self.bind_expr(e, scope)?;
        if let Some(t) = ty {
            if ops::category(&t) != Category::String {
                return Err(SqlError::undefined_function(format!(
                    "operator does not exist: {t} ~~ unknown"
                )));
            }
        }
        let (mut pattern, _) = self.bind_expr_as(pattern, scope, DataType::Text)?;
        if let Some(escape) = escape {
            // `ESCAPE c` rewrites the pattern into the default escape (PostgreSQL's like_escape).
            let (escape, _) = self.bind_expr_as(escape, scope, DataType::Text)?;
            let like_escape = functions::lookup("like_escape", 2)?;
            pattern = fold(Expr::Call(like_escape, vec![pattern, escape]))?;
        }
        let like = Expr::Like {
            expr: Box::new(expr),
            pattern: Box::new(pattern),
            case_insensitive,
        };
        Ok((negate_if(like, negated), Some(DataType::Boolean)))
    }

    fn bind_unary(&mut self, op: &UnaryOperator, e: &AstExpr, scope: &Scope) -> Result<Typed> {
        match op {
            UnaryOperator::Not => {
                let (expr, _) = self.bind_expr_as(e, scope, DataType::Boolean)?;
                Ok((Expr::Not(Box::new(expr)), Some(DataType::Boolean)))
            }
            UnaryOperator::Minus => {
                // PostgreSQL's unary minus binds tighter than `^` (`-2 ^ 2` is 4), the parser's
                // looser: the minus goes back onto the power's base.
                if let AstExpr::BinaryOp {
                    left,
                    op: op @ BinaryOperator::PGExp,
                    right,
                } = e
                {
                    let base = AstExpr::UnaryOp {
                        op: UnaryOperator::Minus,
                        expr: left.clone(),
                    };
                    return self.bind_binary(&base, op, right, scope);
                }
                if let AstExpr::Value(v) = e {
                    if let ast::Value::Number(n, _) = &v.value {
                        let value = parse_number(&format!("-{n}"))?;
                        let ty = value.data_type();
                        return Ok((Expr::Literal(value), ty));
                    }
                }
                let (expr, ty) = self.bind_expr(e, scope)?;
                let expr = if ty.is_none() {
                    self.settle(expr, None, DataType::Integer)?
                } else {
                    expr
                };
                let ty = ty.or(Some(DataType::Integer));
                let negatable = |t: DataType| {
                    matches!(ops::category(&t), Category::Numeric | Category::Interval)
                };
                if ty.is_some_and(|t| !negatable(t)) {
                    return Err(SqlError::undefined_function(format!(
                        "operator does not exist: - {}",
                        crate::types::type_name(ty)
                    )));
                }
                Ok((fold(Expr::Neg(Box::new(expr)))?, ty))
            }
            UnaryOperator::Plus => self.bind_expr(e, scope),
            UnaryOperator::PGAbs => self.bind_call("abs", &[e], scope),
            UnaryOperator::BitwiseNot => {
                let (expr, ty) = self.bind_expr(e, scope)?;
                let ty = ty.unwrap_or(DataType::Integer);
                if !crate::execution::bitwise::is_integer(ty) {
                    return Err(SqlError::undefined_function(format!(
                        "operator does not exist: ~ {ty}"
                    )));
                }
                let expr = coerce_to(expr, None, ty)?;
                let not = &crate::execution::bitwise::NOT;
                Ok((Expr::Call(not, vec![expr]), Some(ty)))
            }
            UnaryOperator::PGSquareRoot | UnaryOperator::PGCubeRoot => {
                // PostgreSQL has these for double precision only.
                let (operand, _) = self.bind_expr_as(e, scope, DataType::Double)?;
                let name = match op {
                    UnaryOperator::PGSquareRoot => "sqrt",
                    _ => "cbrt",
                };
                let f = functions::lookup(name, 1)?;
                Ok((Expr::Call(f, vec![operand]), Some(DataType::Double)))
            }
            other => Err(SqlError::unsupported(format!("operator {other}"))),
        }
    }

    fn bind_cast(
        &mut self,
        e: &AstExpr,
        data_type: &ast::DataType,
        scope: &Scope,
    ) -> Result<Typed> {
        if let Some(result) = crate::planner::binding::bind_special_cast(self, e, data_type, scope)?
        {
            return Ok(result);
        }
        let ty = convert_type_in(data_type, self.engine)?;
        if let (DataType::Real | DataType::Double, Some(number)) = (ty, number_literal(e)) {
            // The literal read as the float it is cast to: the same value as through numeric,
            // whose 28 digits would refuse `1.5e-300`.
            let value = Value::Text(number).cast_to(&ty)?;
            return Ok((Expr::Literal(value), Some(ty)));
        }
        let (expr, from) = self.bind_expr(e, scope)?;
        let expr = match (expr, from) {
            (Expr::Literal(Value::Text(s)), None) => Expr::Literal(Value::Text(s).cast_to(&ty)?),
            (expr @ Expr::Param { ty: None, .. }, None) => self.settle(expr, None, ty)?,
            (expr, from) if ops::category(&ty) == Category::String => {
                let expr = crate::system::arrays::shown_array(expr, from);
                fold(Expr::Cast(Box::new(char_as_text(expr, from)), ty))?
            }
            (expr, _) => fold(Expr::Cast(Box::new(expr), ty))?,
        };
        Ok((expr, Some(ty)))
    }

    fn bind_case(
        &mut self,
        operand: Option<&AstExpr>,
        conditions: &[ast::CaseWhen],
        otherwise: Option<&AstExpr>,
        scope: &Scope,
    ) -> Result<Typed> {
        let operand = operand.map(|o| self.bind_expr(o, scope)).transpose()?;
        let mut whens = Vec::new();
        let mut results: Vec<Typed> = Vec::new();
        for when in conditions {
            let condition = match &operand {
                Some((subject, subject_ty)) => {
                    let (w, wt) = self.bind_expr(&when.condition, scope)?;
                    self.unify(subject.clone(), *subject_ty, w, wt, "=")?.1
                }
                None => {
                    self.bind_expr_as(&when.condition, scope, DataType::Boolean)?
                        .0
                }
            };
            whens.push(condition);
            results.push(self.bind_expr(&when.result, scope)?);
        }
        let otherwise = otherwise.map(|o| self.bind_expr(o, scope)).transpose()?;
        let ty = common_type(
            results.iter().chain(otherwise.iter()).map(|(_, t)| *t),
            "CASE",
        )?;
        let mut coerced = Vec::new();
        for (expr, t) in results {
            coerced.push(self.coerce_branch(expr, t, ty)?);
        }
        let otherwise = otherwise
            .map(|(e, t)| self.coerce_branch(e, t, ty))
            .transpose()?;
        Ok((
            Expr::Case {
                operand: operand.map(|(e, _)| Box::new(e)),
                whens: whens.into_iter().zip(coerced).collect(),
                otherwise: otherwise.map(Box::new),
            },
            Some(ty),
        ))
    }

    /// A CASE branch (or COALESCE argument) brought to the expression's type.
    pub(crate) fn coerce_branch(
        &mut self,
        expr: Expr,
        from: Option<DataType>,
        to: DataType,
    ) -> Result<Expr> {
        match from {
            Some(f) if ops::category(&f) != ops::category(&to) => Err(SqlError::datatype_mismatch(
                format!("CASE types {to} and {f} cannot be matched"),
            )),
            Some(f) if f != to && ops::category(&to) == Category::Numeric => {
                Ok(Expr::Cast(Box::new(expr), to))
            }
            _ => self.settle(expr, from, to),
        }
    }
}

/// The type values of these types are brought to (CASE, COALESCE, GREATEST...): the first known
/// type, widened across numeric types; types of different categories cannot be matched (42804).
pub fn common_type(
    types: impl Iterator<Item = Option<DataType>>,
    construct: &str,
) -> Result<DataType> {
    let mut common: Option<DataType> = None;
    for ty in types.flatten() {
        common = Some(match common {
            None => ty,
            Some(c) if ops::category(&c) != ops::category(&ty) => {
                return Err(SqlError::datatype_mismatch(format!(
                    "{construct} types {c} and {ty} cannot be matched"
                )))
            }
            Some(c) if ops::category(&c) == Category::Numeric => {
                ops::arith_type(ArithOp::Add, &c, &ty).unwrap_or(c)
            }
            Some(c) => c,
        });
    }
    Ok(common.unwrap_or(DataType::Text))
}

/// A `char(n)` value used as text loses its padding (PostgreSQL's bpchar-to-text conversion).
fn char_as_text(expr: Expr, ty: Option<DataType>) -> Expr {
    match (ty, functions::lookup("rtrim", 1)) {
        (Some(DataType::Char(_)), Ok(rtrim)) => Expr::Call(rtrim, vec![expr]),
        _ => expr,
    }
}

pub(crate) fn comparison(op: &BinaryOperator) -> Option<CmpOp> {
    Some(match op {
        BinaryOperator::Eq => CmpOp::Eq,
        BinaryOperator::NotEq => CmpOp::NotEq,
        BinaryOperator::Lt => CmpOp::Lt,
        BinaryOperator::LtEq => CmpOp::LtEq,
        BinaryOperator::Gt => CmpOp::Gt,
        BinaryOperator::GtEq => CmpOp::GtEq,
        _ => return None,
    })
}

fn numeric() -> DataType {
    DataType::Numeric {
        precision: None,
        scale: None,
    }
}

/// Whether values of the two types can be compared.
pub fn comparable(a: &DataType, b: &DataType) -> bool {
    let json = |t: &DataType| *t == DataType::Json;
    ops::category(a) == ops::category(b) && !json(a) && !json(b)
}

fn not(e: Expr) -> Expr {
    Expr::Not(Box::new(e))
}

/// `INTERVAL '1 day'`, and `INTERVAL '3' DAY` (a number and its unit); other SQL-standard field
/// qualifiers (`YEAR TO MONTH`, precisions) are refused rather than ignored.
fn interval_literal(interval: &ast::Interval) -> Result<(Expr, Option<DataType>)> {
    let AstExpr::Value(value) = interval.value.as_ref() else {
        return Err(SqlError::unsupported(format!(
            "INTERVAL {}",
            interval.value
        )));
    };
    let text = literal_text(&value.value)?;
    let qualified = interval.last_field.is_some()
        || interval.leading_precision.is_some()
        || interval.fractional_seconds_precision.is_some();
    let text = match &interval.leading_field {
        _ if qualified => return Err(SqlError::unsupported(format!("{interval}"))),
        None => text,
        Some(unit) => format!("{text} {unit}"),
    };
    let value = Value::parse(&DataType::Interval, &text)?;
    Ok((Expr::Literal(value), Some(DataType::Interval)))
}

fn negate_if(e: Expr, negated: bool) -> Expr {
    if negated {
        not(e)
    } else {
        e
    }
}

/// The text of a string-like literal.
pub fn literal_text(value: &ast::Value) -> Result<String> {
    match value {
        ast::Value::SingleQuotedString(s)
        | ast::Value::EscapedStringLiteral(s)
        | ast::Value::UnicodeStringLiteral(s)
        | ast::Value::NationalStringLiteral(s) => Ok(s.clone()),
        ast::Value::DollarQuotedString(d) => Ok(d.value.clone()),
        ast::Value::HexStringLiteral(h) => Ok(format!("\\x{h}")),
        ast::Value::Number(n, _) => Ok(n.clone()),
        ast::Value::Boolean(b) => Ok(b.to_string()),
        other => Err(SqlError::unsupported(format!("literal {other}"))),
    }
}

impl Binder<'_> {
    /// `value AT TIME ZONE zone`: PostgreSQL's `timezone(zone, value)`. A `timestamptz` becomes
    /// the local time in the zone (a `timestamp`), a `timestamp` the instant that local time is
    /// (a `timestamptz`); a date or an untyped literal is read as a `timestamptz` first, as
    /// PostgreSQL resolves them (its preferred date-time type).
    fn bind_at_time_zone(
        &mut self,
        value: &AstExpr,
        zone: &AstExpr,
        scope: &Scope,
    ) -> Result<Typed> {
        let (zone, _) = self.bind_expr_as(zone, scope, DataType::Text)?;
        let (value, ty) = match self.bind_expr(value, scope)? {
            (value, Some(DataType::Timestamp)) => (value, DataType::TimestampTz),
            (value, Some(DataType::TimestampTz)) => (value, DataType::Timestamp),
            (value, None | Some(DataType::Date)) => (
                Expr::Cast(Box::new(value), DataType::TimestampTz),
                DataType::Timestamp,
            ),
            (_, Some(other)) => {
                return Err(SqlError::undefined_function(format!(
                    "function timezone(text, {other}) does not exist"
                )))
            }
        };
        let f = functions::lookup("timezone", 2)?;
        Ok((Expr::Call(f, vec![zone, value]), Some(ty)))
    }

    /// `predicate` (the bound WHERE clause `selection`) with the keys of the partial indexes the
    /// clause reaches added: when every conjunct of an index's predicate is among the clause's
    /// and the clause compares the index's element for equality with `x`, the clause implies
    /// `column = x` for the index's hidden column (its element wherever the predicate holds),
    /// which the index can serve. The added conjuncts change no result.
    pub(crate) fn with_partial_index_keys(
        &mut self,
        selection: &AstExpr,
        predicate: Expr,
        scope: &Scope,
    ) -> Result<Expr> {
        let mut predicate = predicate;
        for (column, x) in partial_index_keys(selection, scope) {
            let (x, ty) = self.bind_expr(x, scope)?;
            let Some(target) = scope.columns[column].ty else {
                continue;
            };
            let Ok(x) = coerce_to(x, ty, target) else {
                continue;
            };
            let key = Expr::Compare(CmpOp::Eq, Box::new(Expr::Column(column)), Box::new(x));
            predicate = Expr::And(Box::new(predicate), Box::new(key));
        }
        Ok(predicate)
    }
}

/// The `(hidden column, x)` pairs of [`Binder::with_partial_index_keys`].
fn partial_index_keys<'e>(selection: &'e AstExpr, scope: &Scope) -> Vec<(usize, &'e AstExpr)> {
    use crate::execution::constraints::column_partial;
    let partial: Vec<(usize, &str, &str)> = scope
        .columns
        .iter()
        .enumerate()
        .filter_map(|(i, c)| column_partial(&c.name).map(|(e, p)| (i, e, p)))
        .collect();
    if partial.is_empty() {
        return Vec::new();
    }
    let mut conjuncts = Vec::new();
    ast_conjuncts(selection, &mut conjuncts);
    let texts: Vec<String> = conjuncts.iter().map(|c| c.to_string()).collect();
    let mut keys = Vec::new();
    for (column, element, predicate) in partial {
        let Ok(predicate) = crate::parser::parse_expr(predicate) else {
            continue;
        };
        if !implies_conjuncts(&texts, &predicate) {
            continue;
        }
        let equal_to = conjuncts.iter().find_map(|c| match c {
            AstExpr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } if left.to_string() == element => Some(right.as_ref()),
            AstExpr::BinaryOp {
                left,
                op: BinaryOperator::Eq,
                right,
            } if right.to_string() == element => Some(left.as_ref()),
            _ => None,
        });
        keys.extend(equal_to.map(|x| (column, x)));
    }
    keys
}

/// Whether a clause whose conjuncts are written `texts` implies `predicate`: each of the
/// predicate's conjuncts is one of them (PostgreSQL's proof is wider; this one is what a partial
/// index's users write — its predicate, maybe with more).
fn implies_conjuncts(texts: &[String], predicate: &AstExpr) -> bool {
    let mut required = Vec::new();
    ast_conjuncts(predicate, &mut required);
    required.iter().all(|r| texts.contains(&r.to_string()))
}

/// Whether `clause` implies the predicate written `predicate` (see [`implies_conjuncts`]).
pub(crate) fn implies(clause: &AstExpr, predicate: &str) -> bool {
    let Ok(predicate) = crate::parser::parse_expr(predicate) else {
        return false;
    };
    let mut conjuncts = Vec::new();
    ast_conjuncts(clause, &mut conjuncts);
    let texts: Vec<String> = conjuncts.iter().map(|c| c.to_string()).collect();
    implies_conjuncts(&texts, &predicate)
}

/// The top-level AND conjuncts of a clause, parentheses around them removed.
fn ast_conjuncts<'e>(e: &'e AstExpr, out: &mut Vec<&'e AstExpr>) {
    match e {
        AstExpr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            ast_conjuncts(left, out);
            ast_conjuncts(right, out);
        }
        AstExpr::Nested(inner) => ast_conjuncts(inner, out),
        other => out.push(other),
    }
}

/// The hidden column of an expression index holding `e`'s values, when exactly one column of
/// the scope holds them (the expression is then read, not computed: the index can serve it).
fn expression_column_of(e: &AstExpr, scope: &Scope) -> Option<Typed> {
    use crate::execution::constraints::{expression_column, EXPRESSION_PREFIX};
    if matches!(
        e,
        AstExpr::Identifier(_) | AstExpr::CompoundIdentifier(_) | AstExpr::Value(_)
    ) || !scope
        .columns
        .iter()
        .any(|c| c.name.starts_with(EXPRESSION_PREFIX))
    {
        return None;
    }
    let wanted = expression_column(&e.to_string());
    let mut holding = scope
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.name == wanted);
    match (holding.next(), holding.next()) {
        (Some((i, column)), None) => Some((Expr::Column(i), column.ty)),
        _ => None,
    }
}

/// Identifiers that name values rather than columns (`current_date`, `current_timestamp`...).
fn special_identifier(name: &str) -> Option<Typed> {
    let function = match name {
        "current_date" | "current_timestamp" | "localtimestamp" | "localtime" | "current_user"
        | "session_user" | "user" | "current_schema" => functions::lookup(name, 0).ok()?,
        _ => return None,
    };
    let ty = (function.returns)(&[]);
    Some((Expr::Call(function, vec![]), ty))
}

/// Folds an expression made only of literals into a literal. One that fails is left for run time,
/// so an error is raised only if the expression is really evaluated (`CASE`, `COALESCE` branches).
fn fold(expr: Expr) -> Result<Expr> {
    if !expr.is_constant() || matches!(expr, Expr::Literal(_)) {
        return Ok(expr);
    }
    match crate::execution::executor::eval_constant(&expr) {
        Ok(value) => Ok(Expr::Literal(value)),
        Err(_) => Ok(expr),
    }
}

/// The text of a number literal, negated or not (`1.5e-300`, `-2`).
fn number_literal(e: &AstExpr) -> Option<String> {
    match e {
        AstExpr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => Some(n.clone()),
            _ => None,
        },
        AstExpr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            AstExpr::Value(_) => number_literal(expr).map(|n| format!("-{n}")),
            _ => None,
        },
        _ => None,
    }
}

/// The lower bound of a `BETWEEN SYMMETRIC`, which the parser marks by wrapping it in a call
/// of [`crate::parser::SYMMETRIC_BOUND`]; None for an ordinary BETWEEN's; 42601 for none.
fn symmetric_bound(low: &AstExpr) -> Result<Option<&AstExpr>> {
    let AstExpr::Function(call) = low else {
        return Ok(None);
    };
    let marked = matches!(call.name.0.as_slice(),
        [ast::ObjectNamePart::Identifier(name)]
            if name.quote_style.is_some() && name.value == crate::parser::SYMMETRIC_BOUND);
    let ast::FunctionArguments::List(list) = &call.args else {
        return Ok(None);
    };
    match list.args.as_slice() {
        [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(bound))] if marked => Ok(Some(bound)),
        _ if marked => Err(SqlError::syntax("syntax error at or near \"AND\"")),
        _ => Ok(None),
    }
}
