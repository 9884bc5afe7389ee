//! The bitwise operators of the integer types, as PostgreSQL's `int2and` ... `int8shr`: `&`,
//! `|`, `#` (xor), `~` (not), `<<` and `>>`. Two operands of different integer types work in the
//! wider one (`int4 & int8` is a bigint); a shift takes the left operand's type and an integer
//! count, which, as in PostgreSQL, wraps modulo the type's width (C's shift on the machine).

use steady_types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::executor::ExecCtx;
use crate::execution::functions::{strict, Function};
use crate::types::ops::as_i64;

pub static AND: Function = strict("int_and", (2, 2), wider, |a, _| combine(a, |x, y| x & y));
pub static OR: Function = strict("int_or", (2, 2), wider, |a, _| combine(a, |x, y| x | y));
pub static XOR: Function = strict("int_xor", (2, 2), wider, |a, _| combine(a, |x, y| x ^ y));
pub static SHIFT_LEFT: Function = strict("int_shl", (2, 2), first, shift_left);
pub static SHIFT_RIGHT: Function = strict("int_shr", (2, 2), first, shift_right);
pub static NOT: Function = strict("int_not", (1, 1), first, not);

/// The binary operator's function, and whether it is a shift (its right operand a count).
pub fn operator(op: &sqlparser::ast::BinaryOperator) -> Option<(&'static Function, bool)> {
    use sqlparser::ast::BinaryOperator as B;
    Some(match op {
        B::BitwiseAnd => (&AND, false),
        B::BitwiseOr => (&OR, false),
        B::PGBitwiseXor => (&XOR, false),
        B::PGBitwiseShiftLeft => (&SHIFT_LEFT, true),
        B::PGBitwiseShiftRight => (&SHIFT_RIGHT, true),
        _ => return None,
    })
}

/// Whether `ty` is an integer type the operators take.
pub fn is_integer(ty: DataType) -> bool {
    matches!(
        ty,
        DataType::SmallInt | DataType::Integer | DataType::BigInt
    )
}

/// The wider of two integer types.
pub fn wider_of(a: DataType, b: DataType) -> DataType {
    let rank = |t: DataType| match t {
        DataType::SmallInt => 0,
        DataType::Integer => 1,
        _ => 2,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

fn wider(args: &[Option<DataType>]) -> Option<DataType> {
    match (
        args.first().copied().flatten(),
        args.get(1).copied().flatten(),
    ) {
        (Some(a), Some(b)) => Some(wider_of(a, b)),
        (a, b) => a.or(b),
    }
}

fn first(args: &[Option<DataType>]) -> Option<DataType> {
    args.first().copied().flatten()
}

/// `f` of two integers, in the wider operand's type (a result always fits it).
fn combine(args: &[Value], f: impl Fn(i64, i64) -> i64) -> Result<Value> {
    let value = f(as_i64(&args[0]), as_i64(&args[1]));
    Ok(match (&args[0], &args[1]) {
        (Value::BigInt(_), _) | (_, Value::BigInt(_)) => Value::BigInt(value),
        (Value::Integer(_), _) | (_, Value::Integer(_)) => Value::Integer(value as i32),
        _ => Value::SmallInt(value as i16),
    })
}

fn shift_left(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    shifted(args, true)
}

fn shift_right(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    shifted(args, false)
}

/// A shift of the left operand, in its own type, by the right operand's count.
fn shifted(args: &[Value], left: bool) -> Result<Value> {
    let count = as_i64(&args[1]) as u32;
    macro_rules! shift {
        ($x:expr) => {
            if left {
                $x.wrapping_shl(count)
            } else {
                $x.wrapping_shr(count)
            }
        };
    }
    Ok(match args[0] {
        Value::SmallInt(x) => Value::SmallInt(shift!(x)),
        Value::Integer(x) => Value::Integer(shift!(x)),
        Value::BigInt(x) => Value::BigInt(shift!(x)),
        ref other => return Err(not_an_integer(other)),
    })
}

fn not(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(match args[0] {
        Value::SmallInt(x) => Value::SmallInt(!x),
        Value::Integer(x) => Value::Integer(!x),
        Value::BigInt(x) => Value::BigInt(!x),
        ref other => return Err(not_an_integer(other)),
    })
}

fn not_an_integer(value: &Value) -> SqlError {
    SqlError::undefined_function(format!(
        "operator does not exist for type {}",
        crate::types::type_name(value.data_type())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_combine_in_the_wider_type_and_shifts_wrap() {
        let and = combine(&[Value::Integer(5), Value::BigInt(3)], |x, y| x & y).unwrap();
        assert_eq!(and, Value::BigInt(1));
        let or = combine(&[Value::SmallInt(5), Value::SmallInt(3)], |x, y| x | y).unwrap();
        assert_eq!(or, Value::SmallInt(7));
        let call = |function: &'static Function, args: Vec<Value>| {
            let args = args.into_iter().map(crate::execution::expr::Expr::Literal);
            let expr = crate::execution::expr::Expr::Call(function, args.collect());
            crate::execution::executor::eval_constant(&expr).unwrap()
        };
        let shl = call(&SHIFT_LEFT, vec![Value::Integer(1), Value::Integer(33)]);
        assert_eq!(shl, Value::Integer(2));
        let shr = call(&SHIFT_RIGHT, vec![Value::SmallInt(-8), Value::Integer(1)]);
        assert_eq!(shr, Value::SmallInt(-4));
        assert_eq!(call(&NOT, vec![Value::Integer(5)]), Value::Integer(-6));
    }
}
