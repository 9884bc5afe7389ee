//! Binding the json and jsonb operators (`execution::json` evaluates them): `->`, `->>`, `#>`,
//! `#>>` on json and jsonb; `@>`, `<@`, `?`, `?|`, `?&` on jsonb; and `||` and `-` where an
//! operand is jsonb. An untyped operand takes the type the operator expects (jsonb for the
//! containment operators, text for keys and paths), as PostgreSQL resolves unknown literals.

use sqlparser::ast::{BinaryOperator, Expr as AstExpr};
use steady_types::DataType;

use crate::error::{Result, SqlError};
use crate::execution::expr::Expr;
use crate::execution::functions::Function;
use crate::execution::json;
use crate::planner::bind::{Binder, Scope, Typed};
use crate::types::ops::ArithOp;

/// Whether `op` is one of the json operators this module binds.
pub fn is_json_operator(op: &BinaryOperator) -> bool {
    use BinaryOperator::*;
    matches!(
        op,
        Arrow
            | LongArrow
            | HashArrow
            | HashLongArrow
            | AtArrow
            | ArrowAt
            | Question
            | QuestionAnd
            | QuestionPipe
    )
}

fn is_json(ty: Option<DataType>) -> bool {
    matches!(ty, Some(DataType::Json | DataType::Jsonb))
}

fn no_operator(op: &dyn std::fmt::Display, at: Option<DataType>, bt: Option<DataType>) -> SqlError {
    let name = crate::types::type_name;
    SqlError::no_operator(&name(at), op, &name(bt))
}

/// `left op right` for a json operator.
pub fn bind_json_operator(
    binder: &mut Binder<'_>,
    left: &AstExpr,
    op: &BinaryOperator,
    right: &AstExpr,
    scope: &Scope,
) -> Result<Typed> {
    use BinaryOperator::*;
    let (a, at) = binder.bind_expr(left, scope)?;
    let (b, bt) = binder.bind_expr(right, scope)?;
    let array = |t: Option<DataType>| t.as_ref().and_then(DataType::element_type).is_some();
    if matches!(op, AtArrow | ArrowAt) && (array(at) || array(bt)) {
        let symbol = if *op == AtArrow { "@>" } else { "<@" };
        return crate::planner::binding::bind_array_set_operator(binder, symbol, (a, at), (b, bt));
    }
    if matches!(op, AtArrow | ArrowAt) {
        let jsonb = |t: Option<DataType>| matches!(t, None | Some(DataType::Jsonb));
        if !(jsonb(at) && jsonb(bt) && (at.is_some() || bt.is_some())) {
            return Err(no_operator(op, at, bt));
        }
        let a = binder.settle(a, at, DataType::Jsonb)?;
        let b = binder.settle(b, bt, DataType::Jsonb)?;
        let function = if *op == AtArrow {
            &json::CONTAINS
        } else {
            &json::CONTAINED
        };
        return Ok(call(function, a, b, DataType::Boolean));
    }
    let binary = match at {
        Some(DataType::Jsonb) => true,
        Some(DataType::Json) => false,
        _ => return Err(no_operator(op, at, bt)),
    };
    if matches!(op, Question | QuestionAnd | QuestionPipe) && !binary {
        return Err(no_operator(op, at, bt));
    }
    let b = match bt {
        None => binder.settle(b, None, DataType::Text)?,
        Some(_) => b,
    };
    let doc_type = if binary {
        DataType::Jsonb
    } else {
        DataType::Json
    };
    let (function, ty): (&'static Function, DataType) = match op {
        Arrow if binary => (&json::JSONB_ARROW, doc_type),
        Arrow => (&json::JSON_ARROW, doc_type),
        LongArrow => (&json::ARROW_TEXT, DataType::Text),
        HashArrow if binary => (&json::JSONB_PATH, doc_type),
        HashArrow => (&json::JSON_PATH, doc_type),
        HashLongArrow => (&json::PATH_TEXT, DataType::Text),
        Question => (&json::EXISTS, DataType::Boolean),
        QuestionPipe => (&json::EXISTS_ANY, DataType::Boolean),
        _ => (&json::EXISTS_ALL, DataType::Boolean),
    };
    Ok(call(function, a, b, ty))
}

fn call(function: &'static Function, a: Expr, b: Expr, ty: DataType) -> Typed {
    (Expr::Call(function, vec![a, b]), Some(ty))
}

fn jsonb_or_unknown(t: Option<DataType>) -> bool {
    matches!(t, None | Some(DataType::Jsonb))
}

/// Whether `at op bt` is jsonb arithmetic ([`bind_jsonb_arith`]): `jsonb || jsonb` (an untyped
/// side read as jsonb) or `jsonb - text|integer`. False for any other arithmetic, which binds as
/// usual (`jsonb || text` is text concatenation, as in PostgreSQL); an error for arithmetic on
/// json that PostgreSQL has no operator for.
pub fn is_jsonb_arith(op: ArithOp, at: Option<DataType>, bt: Option<DataType>) -> Result<bool> {
    let jsonb = Some(DataType::Jsonb);
    match op {
        ArithOp::Concat => {
            Ok(jsonb_or_unknown(at) && jsonb_or_unknown(bt) && (at == jsonb || bt == jsonb))
        }
        ArithOp::Sub if at == jsonb => Ok(true),
        _ if is_json(at) || is_json(bt) => Err(no_operator(&op.symbol(), at, bt)),
        _ => Ok(false),
    }
}

/// Binds the jsonb arithmetic [`is_jsonb_arith`] accepted.
pub fn bind_jsonb_arith(
    binder: &mut Binder<'_>,
    op: ArithOp,
    (a, at): Typed,
    (b, bt): Typed,
) -> Result<Typed> {
    if op == ArithOp::Concat {
        let a = binder.settle(a, at, DataType::Jsonb)?;
        let b = binder.settle(b, bt, DataType::Jsonb)?;
        return Ok(call(&json::CONCAT, a, b, DataType::Jsonb));
    }
    let b = match bt {
        None => binder.settle(b, None, DataType::Text)?,
        Some(DataType::SmallInt | DataType::Integer | DataType::BigInt | DataType::Text) => b,
        Some(_) => return Err(no_operator(&BinaryOperator::Minus, at, bt)),
    };
    Ok(call(&json::DELETE, a, b, DataType::Jsonb))
}
