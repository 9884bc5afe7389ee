//! Bound expressions and their evaluation.
//!
//! The binder ([`crate::execution::plan`]) turns parsed SQL expressions into [`Expr`]: names are resolved to
//! positions in the input row ([`Expr::Column`]) or in an enclosing query's row
//! ([`Expr::Outer`]), string literals have been coerced to the type their context asks for, and
//! functions are looked up. Evaluation follows SQL's three-valued logic: a NULL operand makes a
//! comparison or arithmetic NULL; AND/OR/NOT, IN and CASE follow the SQL truth tables.
//!
//! Invariant: an [`Expr`] never holds a name; every [`Expr::Subquery`] carries a plan of its own,
//! evaluated through the [`ExecCtx`] (which caches the result of an uncorrelated one).

use std::fmt;

use steady_types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::executor::ExecCtx;
use crate::execution::functions::Function;
use crate::execution::plan::Plan;
use crate::types::ops::{self, ArithOp, CmpOp};

/// A bound scalar expression.
#[derive(Debug, Clone)]
pub enum Expr {
    Literal(Value),
    /// A column of the input row.
    Column(usize),
    /// A column of an enclosing query's current row: `depth` 1 is the nearest.
    Outer {
        depth: usize,
        index: usize,
    },
    /// A statement parameter (`$1` is index 0), cast to its type when it has one.
    Param {
        index: usize,
        ty: Option<DataType>,
    },
    Not(Box<Expr>),
    Neg(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Compare(CmpOp, Box<Expr>, Box<Expr>),
    Arith(ArithOp, Box<Expr>, Box<Expr>),
    IsNull(Box<Expr>),
    /// `a IS DISTINCT FROM b`.
    IsDistinct(Box<Expr>, Box<Expr>),
    /// `e IS TRUE` / `e IS FALSE` (never NULL).
    IsBool(Box<Expr>, bool),
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        case_insensitive: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
    },
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    Cast(Box<Expr>, DataType),
    Call(&'static Function, Vec<Expr>),
    Subquery(Box<Subquery>),
    /// An aggregate's result, only while binding a grouped query.
    AggRef(usize),
    /// A window function's result, only while binding a query with window functions.
    WindowRef(usize),
}

/// A subquery inside an expression.
#[derive(Debug, Clone)]
pub struct Subquery {
    /// Unique within its statement: the key of the cached result of an uncorrelated subquery.
    pub id: usize,
    pub plan: Plan,
    pub kind: SubqueryKind,
    /// Whether the plan refers to the rows of enclosing queries (then it runs once per row).
    pub correlated: bool,
}

#[derive(Debug, Clone)]
pub enum SubqueryKind {
    /// `(SELECT x ...)`: at most one row.
    Scalar,
    /// `EXISTS (...)`.
    Exists,
    /// `expr IN (SELECT ...)`.
    In(Box<Expr>),
    /// `(a, b, …) IN (SELECT x, y, …)`: true if some row equals the needles column by column,
    /// else NULL if some row might (a NULL on either side), else false.
    InRow(Vec<Expr>),
    /// `expr op ANY (SELECT ...)` / `expr op ALL (SELECT ...)`.
    Quantified {
        expr: Box<Expr>,
        op: CmpOp,
        all: bool,
    },
}

impl SubqueryKind {
    /// The expressions compared with the subquery's rows.
    fn needles(&self) -> Vec<&Expr> {
        match self {
            SubqueryKind::In(e) | SubqueryKind::Quantified { expr: e, .. } => vec![e],
            SubqueryKind::InRow(needles) => needles.iter().collect(),
            SubqueryKind::Scalar | SubqueryKind::Exists => Vec::new(),
        }
    }
}

impl Expr {
    pub fn literal_bool(b: bool) -> Expr {
        Expr::Literal(Value::Boolean(b))
    }

    /// Evaluates the expression on `row`.
    pub fn eval(&self, row: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
        Ok(match self {
            Expr::Literal(v) => v.clone(),
            Expr::Column(i) => row[*i].clone(),
            Expr::Outer { depth, index } => ctx.outer_value(*depth, *index),
            Expr::Param { index, ty } => ctx.param(*index, ty.as_ref())?,
            Expr::Not(e) => match truth(&e.eval(row, ctx)?)? {
                Some(b) => Value::Boolean(!b),
                None => Value::Null,
            },
            Expr::Neg(e) => negate(e.eval(row, ctx)?)?,
            Expr::And(a, b) => and(a, b, row, ctx)?,
            Expr::Or(a, b) => or(a, b, row, ctx)?,
            Expr::Compare(op, a, b) => {
                let (a, b) = (a.eval(row, ctx)?, b.eval(row, ctx)?);
                ops::compare(*op, &a, &b)
            }
            Expr::Arith(op, a, b) => {
                let (a, b) = (a.eval(row, ctx)?, b.eval(row, ctx)?);
                ops::arith(*op, &a, &b)?
            }
            Expr::IsNull(e) => Value::Boolean(e.eval(row, ctx)?.is_null()),
            Expr::IsDistinct(a, b) => {
                let (a, b) = (a.eval(row, ctx)?, b.eval(row, ctx)?);
                Value::Boolean(distinct(&a, &b))
            }
            Expr::IsBool(e, want) => Value::Boolean(truth(&e.eval(row, ctx)?)? == Some(*want)),
            Expr::Like {
                expr,
                pattern,
                case_insensitive,
            } => {
                let (text, pattern) = (expr.eval(row, ctx)?, pattern.eval(row, ctx)?);
                if text.is_null() || pattern.is_null() {
                    Value::Null
                } else {
                    let (text, pattern) = (ops::text_of(&text), ops::text_of(&pattern));
                    Value::Boolean(ops::like(&text, &pattern, *case_insensitive))
                }
            }
            Expr::InList { expr, list } => {
                let needle = expr.eval(row, ctx)?;
                let mut candidates = Vec::with_capacity(list.len());
                for item in list {
                    candidates.push(item.eval(row, ctx)?);
                }
                in_values(&needle, candidates.iter())
            }
            Expr::Case {
                operand,
                whens,
                otherwise,
            } => eval_case(operand.as_deref(), whens, otherwise.as_deref(), row, ctx)?,
            Expr::Cast(e, ty) => e.eval(row, ctx)?.cast_to(ty)?,
            Expr::Call(function, args) => {
                let mut values = Vec::with_capacity(args.len());
                for arg in args {
                    values.push(arg.eval(row, ctx)?);
                }
                crate::execution::functions::call(function, &values, ctx)?
            }
            Expr::Subquery(sub) => eval_subquery(sub, row, ctx)?,
            Expr::WindowRef(_) => {
                return Err(SqlError::new(
                    "42P20",
                    "window functions are not allowed here",
                ))
            }
            Expr::AggRef(_) => {
                return Err(SqlError::new(
                    "42803",
                    "aggregate functions are not allowed here",
                ))
            }
        })
    }

    /// Evaluates a predicate: true only when the value is TRUE (NULL and FALSE reject).
    pub fn eval_predicate(&self, row: &[Value], ctx: &mut ExecCtx) -> Result<bool> {
        Ok(truth(&self.eval(row, ctx)?)? == Some(true))
    }

    /// Whether the expression reads nothing but literals (it can be folded).
    pub fn is_constant(&self) -> bool {
        let mut constant = true;
        self.visit(&mut |e| {
            if matches!(
                e,
                Expr::Column(_)
                    | Expr::Outer { .. }
                    | Expr::Param { .. }
                    | Expr::Subquery(_)
                    | Expr::AggRef(_)
                    | Expr::WindowRef(_)
            ) || matches!(e, Expr::Call(f, _) if f.volatile)
            {
                constant = false;
            }
        });
        constant
    }

    /// Whether the expression holds a subquery (which reads the row of the node it sits on
    /// through outer references) or an aggregate's result: it cannot be renumbered or moved to
    /// another node.
    pub fn holds_subquery(&self) -> bool {
        let mut holds = false;
        self.visit(&mut |e| {
            holds |= matches!(e, Expr::Subquery(_) | Expr::AggRef(_) | Expr::WindowRef(_))
        });
        holds
    }

    /// Whether the expression may be evaluated at another node of the plan, as often as that
    /// node runs: no subquery, no aggregate's result, no volatile function.
    pub fn is_movable(&self) -> bool {
        let mut volatile = false;
        self.visit(&mut |e| volatile |= matches!(e, Expr::Call(f, _) if f.volatile));
        !volatile && !self.holds_subquery()
    }

    /// Whether the expression reads the input row.
    pub fn uses_columns(&self) -> bool {
        let mut uses = false;
        self.visit(&mut |e| {
            uses |= matches!(e, Expr::Column(_) | Expr::AggRef(_) | Expr::WindowRef(_))
        });
        uses
    }

    /// Calls `f` on this expression and every sub-expression (not into subquery plans).
    pub fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        for child in self.children() {
            child.visit(f);
        }
    }

    fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Literal(_)
            | Expr::Column(_)
            | Expr::Outer { .. }
            | Expr::Param { .. }
            | Expr::AggRef(_)
            | Expr::WindowRef(_) => vec![],
            Expr::Not(e)
            | Expr::Neg(e)
            | Expr::IsNull(e)
            | Expr::IsBool(e, _)
            | Expr::Cast(e, _) => {
                vec![e]
            }
            Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::Compare(_, a, b)
            | Expr::Arith(_, a, b)
            | Expr::IsDistinct(a, b) => vec![a, b],
            Expr::Like { expr, pattern, .. } => vec![expr, pattern],
            Expr::InList { expr, list } => std::iter::once(&**expr).chain(list).collect(),
            Expr::Case {
                operand,
                whens,
                otherwise,
            } => operand
                .iter()
                .map(|e| &**e)
                .chain(whens.iter().flat_map(|(w, t)| [w, t]))
                .chain(otherwise.iter().map(|e| &**e))
                .collect(),
            Expr::Call(_, args) => args.iter().collect(),
            Expr::Subquery(sub) => sub.kind.needles(),
        }
    }

    /// The expression with every input column `i` read as `f(i)` instead. Only for expressions
    /// without subqueries (a subquery reads the row through outer references this does not
    /// renumber).
    pub fn map_columns(self, f: &dyn Fn(usize) -> usize) -> Expr {
        match self {
            Expr::Column(i) => Expr::Column(f(i)),
            other => match other.map_children(&mut |e| Ok(e.map_columns(f))) {
                Ok(mapped) => mapped,
                Err(_) => unreachable!("renumbering columns cannot fail"),
            },
        }
    }

    /// A copy with every input column moved `by` places to the right.
    pub fn shifted(&self, by: usize) -> Expr {
        self.clone().map_columns(&|i| i + by)
    }

    /// Rebuilds the expression with `f` applied to each direct child.
    pub fn map_children(self, f: &mut dyn FnMut(Expr) -> Result<Expr>) -> Result<Expr> {
        fn t(e: Expr, f: &mut dyn FnMut(Expr) -> Result<Expr>) -> Result<Box<Expr>> {
            Ok(Box::new(f(e)?))
        }
        Ok(match self {
            Expr::Not(e) => Expr::Not(t(*e, f)?),
            Expr::Neg(e) => Expr::Neg(t(*e, f)?),
            Expr::IsNull(e) => Expr::IsNull(t(*e, f)?),
            Expr::IsBool(e, b) => Expr::IsBool(t(*e, f)?, b),
            Expr::Cast(e, ty) => Expr::Cast(t(*e, f)?, ty),
            Expr::And(a, b) => Expr::And(t(*a, f)?, t(*b, f)?),
            Expr::Or(a, b) => Expr::Or(t(*a, f)?, t(*b, f)?),
            Expr::Compare(op, a, b) => Expr::Compare(op, t(*a, f)?, t(*b, f)?),
            Expr::Arith(op, a, b) => Expr::Arith(op, t(*a, f)?, t(*b, f)?),
            Expr::IsDistinct(a, b) => Expr::IsDistinct(t(*a, f)?, t(*b, f)?),
            Expr::Like {
                expr,
                pattern,
                case_insensitive,
            } => Expr::Like {
                expr: t(*expr, f)?,
                pattern: t(*pattern, f)?,
                case_insensitive,
            },
            Expr::InList { expr, list } => Expr::InList {
                expr: t(*expr, f)?,
                list: list.into_iter().map(&mut *f).collect::<Result<_>>()?,
            },
            Expr::Case {
                operand,
                whens,
                otherwise,
            } => Expr::Case {
                operand: operand.map(|e| t(*e, f)).transpose()?,
                whens: whens
                    .into_iter()
                    .map(|(w, r)| Ok((f(w)?, f(r)?)))
                    .collect::<Result<_>>()?,
                otherwise: otherwise.map(|e| t(*e, f)).transpose()?,
            },
            Expr::Call(function, args) => Expr::Call(
                function,
                args.into_iter().map(&mut *f).collect::<Result<_>>()?,
            ),
            Expr::Subquery(mut sub) => {
                sub.kind = match sub.kind {
                    SubqueryKind::In(e) => SubqueryKind::In(t(*e, f)?),
                    SubqueryKind::InRow(needles) => SubqueryKind::InRow(
                        needles.into_iter().map(&mut *f).collect::<Result<_>>()?,
                    ),
                    SubqueryKind::Quantified { expr, op, all } => SubqueryKind::Quantified {
                        expr: t(*expr, f)?,
                        op,
                        all,
                    },
                    other => other,
                };
                Expr::Subquery(sub)
            }
            leaf => leaf,
        })
    }
}

/// Structural equality, used to match select-list expressions against GROUP BY expressions.
impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        format!("{self:?}") == format!("{other:?}") && !matches!(self, Expr::Subquery(_))
    }
}

impl fmt::Display for Expr {
    /// A compact rendering for EXPLAIN, columns shown by position.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.named(&[]))
    }
}

/// An expression shown with the names of its input's columns (see [`Expr::named`]).
pub struct Named<'a> {
    expr: &'a Expr,
    names: &'a [String],
}

impl Expr {
    /// Displays the expression with `names[i]` for column `i` (`#i` where no name is given).
    pub fn named<'a>(&'a self, names: &'a [String]) -> Named<'a> {
        Named { expr: self, names }
    }
}

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = |e: &'_ Expr| {
            Named {
                expr: e,
                names: self.names,
            }
            .to_string()
        };
        let list = |items: &[Expr]| items.iter().map(&n).collect::<Vec<_>>().join(", ");
        match self.expr {
            Expr::Literal(Value::Text(s)) => write!(f, "'{s}'"),
            Expr::Literal(v) => write!(f, "{v}"),
            Expr::Column(i) => match self.names.get(*i) {
                Some(name) => f.write_str(crate::execution::constraints::shown_column(name)),
                None => write!(f, "#{i}"),
            },
            Expr::Outer { depth, index } => write!(f, "outer{depth}.#{index}"),
            Expr::Param { index, .. } => write!(f, "${}", index + 1),
            Expr::Not(e) => write!(f, "(NOT {})", n(e)),
            Expr::Neg(e) => write!(f, "(-{})", n(e)),
            Expr::And(a, b) => write!(f, "({} AND {})", n(a), n(b)),
            Expr::Or(a, b) => write!(f, "({} OR {})", n(a), n(b)),
            Expr::Compare(op, a, b) => write!(f, "({} {} {})", n(a), op.symbol(), n(b)),
            Expr::Arith(op, a, b) => write!(f, "({} {} {})", n(a), op.symbol(), n(b)),
            Expr::IsNull(e) => write!(f, "({} IS NULL)", n(e)),
            Expr::IsDistinct(a, b) => write!(f, "({} IS DISTINCT FROM {})", n(a), n(b)),
            Expr::IsBool(e, b) => write!(f, "({} IS {})", n(e), if *b { "TRUE" } else { "FALSE" }),
            Expr::Like { expr, pattern, .. } => write!(f, "({} ~~ {})", n(expr), n(pattern)),
            Expr::InList { expr, list: items } => write!(f, "({} IN ({}))", n(expr), list(items)),
            Expr::Case { .. } => f.write_str("CASE ... END"),
            Expr::Cast(e, ty) => write!(f, "({})::{ty}", n(e)),
            Expr::Call(function, args) => write!(f, "{}({})", function.name, list(args)),
            Expr::Subquery(sub) => write!(f, "(SubPlan {})", sub.id),
            Expr::AggRef(i) => write!(f, "agg{i}"),
            Expr::WindowRef(i) => write!(f, "window{i}"),
        }
    }
}

/// The truth value of a boolean (or NULL) value.
pub fn truth(value: &Value) -> Result<Option<bool>> {
    match value {
        Value::Null => Ok(None),
        Value::Boolean(b) => Ok(Some(*b)),
        other => Err(SqlError::datatype_mismatch(format!(
            "argument of boolean test must be type boolean, not type {}",
            crate::types::type_name(other.data_type())
        ))),
    }
}

fn and(a: &Expr, b: &Expr, row: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let left = truth(&a.eval(row, ctx)?)?;
    if left == Some(false) {
        return Ok(Value::Boolean(false));
    }
    let right = truth(&b.eval(row, ctx)?)?;
    Ok(match (left, right) {
        (_, Some(false)) => Value::Boolean(false),
        (Some(true), Some(true)) => Value::Boolean(true),
        _ => Value::Null,
    })
}

fn or(a: &Expr, b: &Expr, row: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let left = truth(&a.eval(row, ctx)?)?;
    if left == Some(true) {
        return Ok(Value::Boolean(true));
    }
    let right = truth(&b.eval(row, ctx)?)?;
    Ok(match (left, right) {
        (_, Some(true)) => Value::Boolean(true),
        (Some(false), Some(false)) => Value::Boolean(false),
        _ => Value::Null,
    })
}

fn negate(value: Value) -> Result<Value> {
    let overflow = |ty: &str| SqlError::new("22003", format!("{ty} out of range"));
    Ok(match value {
        Value::SmallInt(v) => Value::SmallInt(v.checked_neg().ok_or_else(|| overflow("smallint"))?),
        Value::Integer(v) => Value::Integer(v.checked_neg().ok_or_else(|| overflow("integer"))?),
        Value::BigInt(v) => Value::BigInt(v.checked_neg().ok_or_else(|| overflow("bigint"))?),
        Value::Real(v) => Value::Real(-v),
        Value::Double(v) => Value::Double(-v),
        Value::Numeric(d) => Value::Numeric(-d),
        Value::Interval(i) => Value::Interval(i.checked_neg().ok_or_else(|| overflow("interval"))?),
        Value::Null => Value::Null,
        other => {
            return Err(SqlError::undefined_function(format!(
                "operator does not exist: - {}",
                crate::types::type_name(other.data_type())
            )))
        }
    })
}

/// `IS DISTINCT FROM`: NULLs are equal to each other and distinct from everything else.
pub fn distinct(a: &Value, b: &Value) -> bool {
    match (a.is_null(), b.is_null()) {
        (true, true) => false,
        (false, false) => a.compare(b) != Some(std::cmp::Ordering::Equal),
        _ => true,
    }
}

/// `needle IN (candidates)` with SQL's NULL rules.
pub fn in_values<'a>(needle: &Value, candidates: impl Iterator<Item = &'a Value>) -> Value {
    let mut candidates = candidates.peekable();
    if candidates.peek().is_none() {
        return Value::Boolean(false);
    }
    if needle.is_null() {
        return Value::Null;
    }
    any_equal(candidates.map(|candidate| needle.compare(candidate).map(|o| o.is_eq())))
}

/// SQL's OR over equalities that may be unknown (None): true at the first true, else NULL if
/// one was unknown, else false.
fn any_equal(equalities: impl Iterator<Item = Option<bool>>) -> Value {
    let mut unknown = false;
    for equal in equalities {
        match equal {
            Some(true) => return Value::Boolean(true),
            None => unknown = true,
            Some(false) => {}
        }
    }
    if unknown {
        Value::Null
    } else {
        Value::Boolean(false)
    }
}

fn eval_case(
    operand: Option<&Expr>,
    whens: &[(Expr, Expr)],
    otherwise: Option<&Expr>,
    row: &[Value],
    ctx: &mut ExecCtx,
) -> Result<Value> {
    let subject = operand.map(|e| e.eval(row, ctx)).transpose()?;
    for (when, then) in whens {
        let value = when.eval(row, ctx)?;
        let matched = match &subject {
            Some(subject) => subject.compare(&value) == Some(std::cmp::Ordering::Equal),
            None => truth(&value)? == Some(true),
        };
        if matched {
            return then.eval(row, ctx);
        }
    }
    otherwise.map_or(Ok(Value::Null), |e| e.eval(row, ctx))
}

fn eval_subquery(sub: &Subquery, row: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let needles = sub
        .kind
        .needles()
        .into_iter()
        .map(|e| e.eval(row, ctx))
        .collect::<Result<Vec<_>>>()?;
    let needle = needles.first().cloned();
    let rows = ctx.run_subquery(sub, row)?;
    Ok(match &sub.kind {
        SubqueryKind::Exists => Value::Boolean(!rows.is_empty()),
        SubqueryKind::Scalar => match rows.len() {
            0 => Value::Null,
            1 => rows[0][0].clone(),
            _ => {
                return Err(SqlError::new(
                    "21000",
                    "more than one row returned by a subquery used as an expression",
                ))
            }
        },
        SubqueryKind::In(_) => {
            let needle = needle.unwrap_or(Value::Null);
            in_values(&needle, rows.iter().map(|r| &r[0]))
        }
        SubqueryKind::InRow(_) => in_rows(&needles, &rows),
        SubqueryKind::Quantified { op, all, .. } => {
            let needle = needle.unwrap_or(Value::Null);
            quantified(&needle, *op, *all, rows.iter().map(|r| &r[0]))
        }
    })
}

/// `(needles) IN (rows)` with SQL's NULL rules (see [`SubqueryKind::InRow`]).
fn in_rows(needles: &[Value], rows: &[Vec<Value>]) -> Value {
    any_equal(rows.iter().map(|row| row_equal(needles, row)))
}

/// Whether two rows are equal column by column: false at the first unequal pair, else unknown
/// (None) if a pair holds a NULL, else true.
fn row_equal(needles: &[Value], row: &[Value]) -> Option<bool> {
    let mut equal = Some(true);
    for (needle, value) in needles.iter().zip(row) {
        match needle.compare(value) {
            Some(std::cmp::Ordering::Equal) => {}
            Some(_) => return Some(false),
            None => equal = None,
        }
    }
    equal
}

/// `needle op ALL (...)` / `needle op ANY (...)` with SQL's NULL rules.
fn quantified<'a>(
    needle: &Value,
    op: CmpOp,
    all: bool,
    values: impl Iterator<Item = &'a Value>,
) -> Value {
    let mut saw_null = false;
    for value in values {
        match ops::compare(op, needle, value) {
            Value::Boolean(b) if b != all => return Value::Boolean(b),
            Value::Null => saw_null = true,
            _ => {}
        }
    }
    if saw_null {
        Value::Null
    } else {
        Value::Boolean(all)
    }
}
