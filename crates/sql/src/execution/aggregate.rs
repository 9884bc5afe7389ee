//! Aggregate functions: `count`, `sum`, `avg`, `min`, `max`, `string_agg`, `bool_and`, `bool_or`
//! (`every`), and the variance family (`var_samp`/`variance`, `var_pop`, `stddev_samp`/`stddev`,
//! `stddev_pop`), with `DISTINCT`, `FILTER (WHERE ...)` and `ORDER BY` inside the call.
//!
//! The variance family follows PostgreSQL's arithmetic so the digits agree: over floats the
//! Youngs-Cramer running sums (`float8_accum`) in double precision; over integers and numerics the
//! exact sums of x and x², then `(n·Σx² − (Σx)²) / (n·(n−1))` (or `n²`) at numeric division's
//! scale, and its square root at that scale (`numeric_stddev_internal`).
//!
//! Result types follow PostgreSQL: `count` is bigint; `sum` of smallint/integer is bigint, of bigint
//! and numeric is numeric, of floats the float; `avg` of exact types is numeric (with the division
//! scale of [`crate::types::ops::numeric_div`]) and of floats double. NULL inputs are skipped; every
//! aggregate but `count` is NULL over no rows.

use std::cmp::Ordering;

use rust_decimal::Decimal;
use steady_types::{ArrayElement, DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::expr::Expr;
use crate::execution::json;
use crate::execution::plan::SortKey;
use crate::execution::regression::{Regression, RegressionSums};
use crate::types::ops::{self, ArithOp};
use steady_types::array::array_text;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    StringAgg,
    BoolAnd,
    BoolOr,
    /// `bit_and`, `bit_or` and `bit_xor` of integers.
    BitAnd,
    BitOr,
    BitXor,
    VarSamp,
    VarPop,
    StddevSamp,
    StddevPop,
    /// `corr(y, x)`, `covar_pop`, `covar_samp` and the `regr_*` aggregates (see
    /// [`crate::execution::regression`]).
    Regression(Regression),
    JsonAgg,
    /// `json_agg(t)` of whole rows (bound from it, no name of its own): rows after the first
    /// on lines of their own, as PostgreSQL writes an aggregate of composite values.
    JsonAggRows,
    JsonbAgg,
    JsonObjectAgg,
    JsonbObjectAgg,
    ArrayAgg,
    /// `GROUPING(a, …)`: a bit per argument, set where the output row's grouping set leaves
    /// that argument out (see `executor::finish_groups`); 0 without grouping sets.
    Grouping,
    /// The ordered-set aggregates (`… WITHIN GROUP (ORDER BY x)`): their arguments are `x` and
    /// then the fraction (none for mode); their inputs are kept and sorted (see
    /// [`Accumulator::finish`]).
    PercentileCont,
    PercentileDisc,
    Mode,
}

impl AggFunc {
    /// The aggregate called `name`, if it is one.
    pub fn by_name(name: &str) -> Option<AggFunc> {
        Some(match name {
            "count" => AggFunc::Count,
            "sum" => AggFunc::Sum,
            "avg" => AggFunc::Avg,
            "min" => AggFunc::Min,
            "max" => AggFunc::Max,
            "string_agg" => AggFunc::StringAgg,
            "bool_and" | "every" => AggFunc::BoolAnd,
            "bool_or" => AggFunc::BoolOr,
            "bit_and" => AggFunc::BitAnd,
            "bit_or" => AggFunc::BitOr,
            "bit_xor" => AggFunc::BitXor,
            "var_samp" | "variance" => AggFunc::VarSamp,
            "var_pop" => AggFunc::VarPop,
            "stddev_samp" | "stddev" => AggFunc::StddevSamp,
            "stddev_pop" => AggFunc::StddevPop,
            "json_agg" => AggFunc::JsonAgg,
            "jsonb_agg" => AggFunc::JsonbAgg,
            "json_object_agg" => AggFunc::JsonObjectAgg,
            "jsonb_object_agg" => AggFunc::JsonbObjectAgg,
            "array_agg" => AggFunc::ArrayAgg,
            "grouping" => AggFunc::Grouping,
            "percentile_cont" => AggFunc::PercentileCont,
            "percentile_disc" => AggFunc::PercentileDisc,
            "mode" => AggFunc::Mode,
            _ => return Regression::by_name(name).map(AggFunc::Regression),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            AggFunc::CountStar | AggFunc::Count => "count",
            AggFunc::Sum => "sum",
            AggFunc::Avg => "avg",
            AggFunc::Min => "min",
            AggFunc::Max => "max",
            AggFunc::StringAgg => "string_agg",
            AggFunc::BoolAnd => "bool_and",
            AggFunc::BoolOr => "bool_or",
            AggFunc::BitAnd => "bit_and",
            AggFunc::BitOr => "bit_or",
            AggFunc::BitXor => "bit_xor",
            AggFunc::VarSamp => "var_samp",
            AggFunc::VarPop => "var_pop",
            AggFunc::StddevSamp => "stddev_samp",
            AggFunc::StddevPop => "stddev_pop",
            AggFunc::JsonAgg | AggFunc::JsonAggRows => "json_agg",
            AggFunc::Regression(which) => which.name(),
            AggFunc::JsonbAgg => "jsonb_agg",
            AggFunc::JsonObjectAgg => "json_object_agg",
            AggFunc::JsonbObjectAgg => "jsonb_object_agg",
            AggFunc::ArrayAgg => "array_agg",
            AggFunc::Grouping => "grouping",
            AggFunc::PercentileCont => "percentile_cont",
            AggFunc::PercentileDisc => "percentile_disc",
            AggFunc::Mode => "mode",
        }
    }

    /// Whether the aggregate takes WITHIN GROUP (ORDER BY …).
    pub fn is_ordered_set(self) -> bool {
        matches!(
            self,
            AggFunc::PercentileCont | AggFunc::PercentileDisc | AggFunc::Mode
        )
    }

    /// How many arguments the aggregate takes.
    pub fn arity(self) -> usize {
        match self {
            AggFunc::StringAgg
            | AggFunc::JsonObjectAgg
            | AggFunc::JsonbObjectAgg
            | AggFunc::Regression(_) => 2,
            _ => 1,
        }
    }

    /// The aggregates that collect their inputs, NULLs too, in input order: the json ones and
    /// array_agg.
    fn collects(self) -> bool {
        matches!(
            self,
            AggFunc::JsonAgg
                | AggFunc::JsonAggRows
                | AggFunc::JsonbAgg
                | AggFunc::JsonObjectAgg
                | AggFunc::JsonbObjectAgg
                | AggFunc::ArrayAgg
        )
    }

    fn is_spread(self) -> bool {
        matches!(
            self,
            AggFunc::VarSamp | AggFunc::VarPop | AggFunc::StddevSamp | AggFunc::StddevPop
        )
    }

    /// The result type for an argument of type `arg`.
    pub fn result_type(self, arg: Option<DataType>) -> Result<Option<DataType>> {
        use DataType::*;
        let numeric = Numeric {
            precision: None,
            scale: None,
        };
        Ok(match (self, arg) {
            (AggFunc::CountStar | AggFunc::Count, _) => Some(BigInt),
            (AggFunc::Sum, Some(SmallInt | Integer)) => Some(BigInt),
            (AggFunc::Sum | AggFunc::Avg, Some(BigInt | Numeric { .. })) => Some(numeric),
            (AggFunc::Avg, Some(SmallInt | Integer)) => Some(numeric),
            (AggFunc::Sum, Some(Real)) => Some(Real),
            (AggFunc::Sum | AggFunc::Avg, Some(Real | Double)) => Some(Double),
            (AggFunc::Sum | AggFunc::Avg, Some(Interval)) => Some(Interval),
            (AggFunc::Sum | AggFunc::Avg, other) => {
                return Err(SqlError::undefined_function(format!(
                    "function {}({}) does not exist",
                    self.name(),
                    crate::types::type_name(other)
                )))
            }
            (AggFunc::Min | AggFunc::Max, Some(TextArray | Array(_))) => {
                // Its accumulator compares values, and an array value is its text, which does
                // not order as the array does (see `system::arrays::ARRAY_ORDER_KEY`).
                return Err(SqlError::unsupported(format!(
                    "{}() of an array",
                    self.name()
                )));
            }
            (AggFunc::Min | AggFunc::Max, other) => Some(other.unwrap_or(Text)),
            (AggFunc::StringAgg, _) => Some(Text),
            (AggFunc::JsonAgg | AggFunc::JsonAggRows | AggFunc::JsonObjectAgg, _) => Some(Json),
            (AggFunc::JsonbAgg | AggFunc::JsonbObjectAgg, _) => Some(Jsonb),
            (AggFunc::ArrayAgg, Some(Char(_) | Varchar(_) | Text | TextArray)) => Some(TextArray),
            (AggFunc::ArrayAgg, Some(Numeric { .. })) => Some(Array(ArrayElement::Numeric)),
            (AggFunc::ArrayAgg, Some(ty)) if ArrayElement::of(&ty).is_some() => ty.array_type(),
            (AggFunc::ArrayAgg, _) => Some(Text),
            (AggFunc::BoolAnd | AggFunc::BoolOr, _) => Some(Boolean),
            (
                AggFunc::BitAnd | AggFunc::BitOr | AggFunc::BitXor,
                Some(SmallInt | Integer | BigInt),
            ) => arg,
            (AggFunc::Grouping, _) => Some(Integer),
            (AggFunc::Regression(Regression::Count), _) => Some(BigInt),
            (
                AggFunc::Regression(_),
                None | Some(SmallInt | Integer | BigInt | Numeric { .. } | Real | Double),
            ) => Some(Double),
            (AggFunc::PercentileCont, Some(SmallInt | Integer | BigInt | Numeric { .. })) => {
                Some(Double)
            }
            (AggFunc::PercentileCont, Some(Real | Double)) => Some(Double),
            (AggFunc::PercentileDisc | AggFunc::Mode, other) => Some(other.unwrap_or(Text)),
            (f, Some(Real | Double)) if f.is_spread() => Some(Double),
            (f, Some(SmallInt | Integer | BigInt | Numeric { .. })) if f.is_spread() => {
                Some(numeric)
            }
            (f, other) => {
                return Err(SqlError::undefined_function(format!(
                    "function {}({}) does not exist",
                    f.name(),
                    crate::types::type_name(other)
                )))
            }
        })
    }
}

/// One aggregate call of a query.
#[derive(Debug, Clone)]
pub struct AggCall {
    pub func: AggFunc,
    pub args: Vec<Expr>,
    pub distinct: bool,
    pub filter: Option<Expr>,
    pub order_by: Vec<SortKey>,
    pub ty: Option<DataType>,
}

/// The running state of one aggregate over one group.
#[derive(Debug, Clone)]
pub struct Accumulator {
    func: AggFunc,
    count: i64,
    value: Value,
    /// Inputs kept for DISTINCT or ORDER BY: (sort keys, arguments).
    kept: Vec<(Vec<Value>, Vec<Value>)>,
    keeps_inputs: bool,
    /// SUM/AVG's integer inputs, summed exactly here and added to `value` at the end (a numeric
    /// addition per row was most of what SUM of an integer column cost).
    integer_sum: i128,
    /// The variance family's running sums.
    spread: Spread,
    /// The collecting aggregates' inputs so far: (key, value), the key only for the json object
    /// aggregates.
    collected: Vec<(Value, Value)>,
    /// The two-variable aggregates' running sums.
    regression: RegressionSums,
}

/// The running sums of the variance family: Youngs-Cramer's (n, Σx, Sxx) over floats, or the
/// exact Σx and Σx² over integers and numerics (`count` is n).
#[derive(Debug, Clone, Default)]
struct Spread {
    float: Option<(f64, f64, f64)>,
    exact: Option<(Decimal, Decimal)>,
}

impl Accumulator {
    pub fn new(call: &AggCall) -> Self {
        Accumulator {
            func: call.func,
            count: 0,
            value: Value::Null,
            kept: Vec::new(),
            keeps_inputs: call.distinct || !call.order_by.is_empty(),
            integer_sum: 0,
            spread: Spread::default(),
            collected: Vec::new(),
            regression: RegressionSums::default(),
        }
    }

    /// Adds one input row's arguments (and its ORDER BY keys).
    pub fn add(&mut self, args: Vec<Value>, sort_keys: Vec<Value>) -> Result<()> {
        if self.keeps_inputs {
            self.kept.push((sort_keys, args));
            return Ok(());
        }
        self.fold(&args)
    }

    /// Whether the accumulator keeps its inputs (DISTINCT, ORDER BY) rather than folding them.
    pub fn keeps_inputs(&self) -> bool {
        self.keeps_inputs
    }

    /// Folds one input row's arguments into the running value (for an accumulator that does not
    /// keep its inputs).
    pub fn fold(&mut self, args: &[Value]) -> Result<()> {
        if self.func == AggFunc::CountStar {
            self.count += 1;
            return Ok(());
        }
        if self.func.collects() {
            return self.collect(args);
        }
        if let AggFunc::Regression(_) = self.func {
            if !args.iter().any(Value::is_null) {
                self.count += 1;
                self.regression
                    .add(ops::as_f64(&args[0]), ops::as_f64(&args[1]));
            }
            return Ok(());
        }
        let input = &args[0];
        if input.is_null() {
            return Ok(());
        }
        self.count += 1;
        if self.func.is_spread() {
            return self.spread.add(input);
        }
        if matches!(self.func, AggFunc::Sum | AggFunc::Avg)
            && matches!(
                input,
                Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_)
            )
        {
            self.integer_sum += i128::from(ops::as_i64(input));
            return Ok(());
        }
        self.value = match self.func {
            AggFunc::Count | AggFunc::CountStar => Value::Null,
            AggFunc::Sum | AggFunc::Avg => add_to_sum(&self.value, input)?,
            AggFunc::Min => pick(&self.value, input, Ordering::Less),
            AggFunc::Max => pick(&self.value, input, Ordering::Greater),
            AggFunc::StringAgg => string_agg_step(&self.value, input, args.get(1)),
            AggFunc::BoolAnd => bool_step(&self.value, input, true),
            AggFunc::BoolOr => bool_step(&self.value, input, false),
            f @ (AggFunc::BitAnd | AggFunc::BitOr | AggFunc::BitXor) => {
                bit_step(f, &self.value, input)
            }
            _ => Value::Null,
        };
        Ok(())
    }

    /// A collecting aggregate's input (NULL too), under its key for the json object aggregates.
    fn collect(&mut self, args: &[Value]) -> Result<()> {
        self.count += 1;
        let pair = match self.func {
            AggFunc::JsonObjectAgg | AggFunc::JsonbObjectAgg => {
                if args[0].is_null() {
                    return Err(SqlError::new("22004", "field name must not be null"));
                }
                (args[0].clone(), args[1].clone())
            }
            _ => (Value::Null, args[0].clone()),
        };
        self.collected.push(pair);
        Ok(())
    }

    /// A collecting aggregate's value over its inputs.
    fn collected_value(self) -> Result<Value> {
        let values = self.collected.into_iter();
        Ok(match self.func {
            AggFunc::ArrayAgg => {
                let elements: Vec<Value> = values.map(|(_, v)| v).collect();
                Value::Text(array_text(&elements))
            }
            AggFunc::JsonObjectAgg | AggFunc::JsonbObjectAgg => {
                let members = values
                    .map(|(k, v)| Ok((k.to_string(), json::to_document(&v)?)))
                    .collect::<Result<_>>()?;
                json::object_aggregate(members, self.func == AggFunc::JsonbObjectAgg)
            }
            AggFunc::JsonAgg => json::json_agg_text(values.map(|(_, v)| v), ", ")?,
            AggFunc::JsonAggRows => json::json_agg_text(values.map(|(_, v)| v), ", \n ")?,
            _ => {
                let items = values
                    .map(|(_, v)| json::to_document(&v))
                    .collect::<Result<_>>()?;
                json::jsonb_aggregate(items)
            }
        })
    }

    /// Whether states of `call` over parts of its input can be merged ([`Accumulator::merge`]):
    /// not with DISTINCT or ORDER BY, nor for string_agg, whose results need every input together
    /// or in order.
    pub fn mergeable(call: &AggCall) -> bool {
        !call.distinct
            && call.order_by.is_empty()
            && call.func != AggFunc::StringAgg
            && !call.func.is_spread()
            && !call.func.collects()
            && !matches!(call.func, AggFunc::Regression(_))
    }

    /// Folds in the state of the same aggregate over another part of the input (a call that is
    /// [`Accumulator::mergeable`]).
    pub fn merge(&mut self, other: Accumulator) -> Result<()> {
        self.count += other.count;
        self.integer_sum += other.integer_sum;
        if other.value.is_null() {
            return Ok(());
        }
        self.value = match self.func {
            AggFunc::Sum | AggFunc::Avg => add_to_sum(&self.value, &other.value)?,
            AggFunc::Min => pick(&self.value, &other.value, Ordering::Less),
            AggFunc::Max => pick(&self.value, &other.value, Ordering::Greater),
            AggFunc::BoolAnd => bool_step(&self.value, &other.value, true),
            AggFunc::BoolOr => bool_step(&self.value, &other.value, false),
            f @ (AggFunc::BitAnd | AggFunc::BitOr | AggFunc::BitXor) => {
                bit_step(f, &self.value, &other.value)
            }
            _ => {
                return Err(SqlError::new(
                    "XX000",
                    format!("{} states cannot be merged", self.func.name()),
                ))
            }
        };
        Ok(())
    }

    /// The aggregate's value; `order` gives the directions of the call's ORDER BY keys.
    pub fn finish(mut self, call: &AggCall) -> Result<Value> {
        if self.keeps_inputs {
            let mut kept = std::mem::take(&mut self.kept);
            if call.distinct {
                kept.sort_by(|a, b| compare_rows(&a.1, &b.1));
                kept.dedup_by(|a, b| compare_rows(&a.1, &b.1) == Ordering::Equal);
            }
            if !call.order_by.is_empty() {
                kept.sort_by(|a, b| compare_by_keys(&a.0, &b.0, &call.order_by));
            }
            if self.func.is_ordered_set() {
                return ordered_set_value(self.func, kept);
            }
            for (_, args) in kept {
                self.fold(&args)?;
            }
        }
        self.add_integer_sum()?;
        Ok(match self.func {
            AggFunc::CountStar | AggFunc::Count => Value::BigInt(self.count),
            AggFunc::Grouping => Value::Integer(0),
            AggFunc::Sum => sum_result(self.value, call.ty),
            AggFunc::Avg if self.count == 0 => Value::Null,
            AggFunc::Avg => avg_result(self.value, self.count)?,
            f if f.is_spread() => self.spread.result(f, self.count)?,
            AggFunc::Regression(which) => self.regression.result(which),
            _ if self.count == 0 && self.func.collects() => Value::Null,
            f if f.collects() => self.collected_value()?,
            _ => self.value,
        })
    }
}

impl Spread {
    fn add(&mut self, input: &Value) -> Result<()> {
        if let Value::Real(_) | Value::Double(_) = input {
            let x = match input {
                Value::Real(v) => f64::from(*v),
                Value::Double(v) => *v,
                _ => 0.0,
            };
            let (n, sx, sxx) = self.float.unwrap_or((0.0, 0.0, 0.0));
            let (n, sx) = (n + 1.0, sx + x);
            let sxx = if n > 1.0 {
                let t = x * n - sx;
                sxx + t * t / (n * (n - 1.0))
            } else {
                0.0
            };
            self.float = Some((n, sx, sxx));
            return Ok(());
        }
        let x = match input {
            Value::Numeric(d) => *d,
            other => Decimal::from(ops::as_i64(other)),
        };
        let (sum, squares) = self.exact.unwrap_or_default();
        let overflow = || SqlError::new("22003", "value out of range for type numeric");
        let square = x.checked_mul(x).ok_or_else(overflow)?;
        self.exact = Some((
            sum.checked_add(x).ok_or_else(overflow)?,
            squares.checked_add(square).ok_or_else(overflow)?,
        ));
        Ok(())
    }

    /// The function's value over `n` inputs: NULL over none (or one, for the sample forms).
    fn result(&self, func: AggFunc, n: i64) -> Result<Value> {
        let sample = matches!(func, AggFunc::VarSamp | AggFunc::StddevSamp);
        let root = matches!(func, AggFunc::StddevSamp | AggFunc::StddevPop);
        if n == 0 || (sample && n == 1) {
            return Ok(Value::Null);
        }
        if let Some((n, _, sxx)) = self.float {
            let variance = sxx / if sample { n - 1.0 } else { n };
            return Ok(Value::Double(if root { variance.sqrt() } else { variance }));
        }
        let (sum, squares) = self.exact.unwrap_or_default();
        let overflow = || SqlError::new("22003", "value out of range for type numeric");
        let count = Decimal::from(n);
        let numerator = count
            .checked_mul(squares)
            .and_then(|a| sum.checked_mul(sum).and_then(|b| a.checked_sub(b)))
            .ok_or_else(overflow)?;
        if numerator <= Decimal::ZERO {
            return Ok(Value::Numeric(Decimal::ZERO));
        }
        let denominator = count
            .checked_mul(if sample { count - Decimal::ONE } else { count })
            .ok_or_else(overflow)?;
        let variance = ops::numeric_div(numerator, denominator)?;
        if !root {
            return Ok(Value::Numeric(variance));
        }
        use rust_decimal::MathematicalOps;
        let scale = variance.scale();
        let root = variance.sqrt().ok_or_else(overflow)?;
        let rounded = root
            .round_dp_with_strategy(scale, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
        Ok(Value::Numeric(ops::with_scale(rounded, scale)))
    }
}

impl Accumulator {
    /// Adds the exact sum of the integer inputs to the running value (as numeric, as each integer
    /// input is).
    fn add_integer_sum(&mut self) -> Result<()> {
        // Inputs were counted but none reached `value`: all were integers (their sum may be 0).
        let saw_integers = self.integer_sum != 0 || (self.count > 0 && self.value.is_null());
        if !saw_integers {
            return Ok(());
        }
        let sum = Decimal::try_from_i128_with_scale(self.integer_sum, 0)
            .map_err(|_| SqlError::new("22003", "value out of range for type numeric"))?;
        self.value = add_to_sum(&self.value, &Value::Numeric(sum))?;
        self.integer_sum = 0;
        Ok(())
    }
}

fn add_to_sum(sum: &Value, input: &Value) -> Result<Value> {
    let widened = match input {
        Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_) => {
            Value::Numeric(Decimal::from(ops::as_i64(input)))
        }
        Value::Real(x) => Value::Double(f64::from(*x)),
        other => other.clone(),
    };
    if sum.is_null() {
        return Ok(widened);
    }
    ops::arith(ArithOp::Add, sum, &widened)
}

fn sum_result(sum: Value, ty: Option<DataType>) -> Value {
    match (sum, ty) {
        (Value::Null, _) => Value::Null,
        (Value::Numeric(d), Some(DataType::BigInt)) => match i64::try_from(d) {
            Ok(v) => Value::BigInt(v),
            Err(_) => Value::Numeric(d),
        },
        (Value::Double(x), Some(DataType::Real)) => Value::Real(x as f32),
        (other, _) => other,
    }
}

fn avg_result(sum: Value, count: i64) -> Result<Value> {
    Ok(match sum {
        Value::Double(x) => Value::Double(x / count as f64),
        Value::Numeric(d) => Value::Numeric(ops::numeric_div(d, Decimal::from(count))?),
        interval @ Value::Interval(_) => {
            ops::arith(ArithOp::Div, &interval, &Value::BigInt(count))?
        }
        other => other,
    })
}

/// min/max's step: `input` replaces `current` unless it is on the wrong side of it — on a tie
/// the later value wins, as PostgreSQL's `*_larger` / `*_smaller` (equal intervals or numerics
/// may be written differently: `'1 mon'` and `'30 days'`, `1.5` and `1.50`).
fn pick(current: &Value, input: &Value, want: Ordering) -> Value {
    let wrong_side = input.compare(current) == Some(want.reverse());
    if current.is_null() || (!input.is_null() && !wrong_side) {
        input.clone()
    } else {
        current.clone()
    }
}

fn string_agg_step(current: &Value, input: &Value, separator: Option<&Value>) -> Value {
    let text = ops::text_of(input);
    match current {
        Value::Null => Value::Text(text),
        Value::Text(so_far) => {
            let separator = separator.filter(|s| !s.is_null()).map(ops::text_of);
            Value::Text(format!("{so_far}{}{text}", separator.unwrap_or_default()))
        }
        other => other.clone(),
    }
}

fn bool_step(current: &Value, input: &Value, all: bool) -> Value {
    let b = matches!(input, Value::Boolean(true));
    match current {
        Value::Boolean(c) if all => Value::Boolean(*c && b),
        Value::Boolean(c) => Value::Boolean(*c || b),
        _ => Value::Boolean(b),
    }
}

/// `bit_and` / `bit_or` / `bit_xor`'s state after `input` (an integer of the state's type).
fn bit_step(func: AggFunc, current: &Value, input: &Value) -> Value {
    let combine = |a: i64, b: i64| match func {
        AggFunc::BitAnd => a & b,
        AggFunc::BitOr => a | b,
        _ => a ^ b,
    };
    match (current, input) {
        (Value::SmallInt(a), Value::SmallInt(b)) => {
            Value::SmallInt(combine((*a).into(), (*b).into()) as i16)
        }
        (Value::Integer(a), Value::Integer(b)) => {
            Value::Integer(combine((*a).into(), (*b).into()) as i32)
        }
        (Value::BigInt(a), Value::BigInt(b)) => Value::BigInt(combine(*a, *b)),
        _ => input.clone(),
    }
}

/// Orders rows for DISTINCT and GROUP BY: NULLs together, after every value.
pub fn compare_rows(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let ordering = compare_nulls_last(x, y);
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

pub fn compare_nulls_last(x: &Value, y: &Value) -> Ordering {
    match (x.is_null(), y.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => x.compare(y).unwrap_or(Ordering::Equal),
    }
}

/// Compares two rows of sort-key values under the keys' directions.
pub fn compare_by_keys(a: &[Value], b: &[Value], keys: &[SortKey]) -> Ordering {
    a.iter()
        .zip(b)
        .zip(keys)
        .map(|((x, y), key)| compare_under_key(x, y, key))
        .find(|ordering| ordering.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// Compares two values under a sort key's direction and NULLS FIRST/LAST.
pub fn compare_under_key(x: &Value, y: &Value, key: &SortKey) -> Ordering {
    match (x.is_null(), y.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) if key.nulls_first => Ordering::Less,
        (true, false) => Ordering::Greater,
        (false, true) if key.nulls_first => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => {
            let ordering = x.compare(y).unwrap_or(Ordering::Equal);
            match key.descending {
                true => ordering.reverse(),
                false => ordering,
            }
        }
    }
}

/// An ordered-set aggregate over its inputs, sorted (each `[x, fraction…]`): NULL inputs are
/// skipped; NULL over no input or with a NULL fraction.
fn ordered_set_value(func: AggFunc, kept: Vec<(Vec<Value>, Vec<Value>)>) -> Result<Value> {
    let fraction = kept.first().and_then(|(_, args)| args.get(1)).cloned();
    let sorted: Vec<Value> = kept
        .into_iter()
        .filter_map(|(_, mut args)| Some(args.swap_remove(0)).filter(|v| !v.is_null()))
        .collect();
    if sorted.is_empty() {
        return Ok(Value::Null);
    }
    if func == AggFunc::Mode {
        return Ok(most_frequent(sorted));
    }
    match fraction {
        Some(Value::Double(f)) => percentile(func, &sorted, f),
        // An array of fractions: an array of their percentiles, NULL for a NULL fraction.
        Some(Value::Text(fractions)) => {
            let fractions = steady_types::array::array_values(&fractions, &DataType::Double)?;
            let values = fractions
                .iter()
                .map(|f| match f {
                    Value::Double(f) => percentile(func, &sorted, *f),
                    _ => Ok(Value::Null),
                })
                .collect::<Result<Vec<Value>>>()?;
            Ok(Value::Text(array_text(&values)))
        }
        _ => Ok(Value::Null),
    }
}

/// The `fraction` percentile of the non-empty `sorted` values: interpolated (`percentile_cont`)
/// or the first value at or past it (`percentile_disc`).
fn percentile(func: AggFunc, sorted: &[Value], fraction: f64) -> Result<Value> {
    if !(0.0..=1.0).contains(&fraction) {
        return Err(SqlError::new(
            "22003",
            format!("percentile value {fraction} is not between 0 and 1"),
        ));
    }
    let last = sorted.len() - 1;
    if func == AggFunc::PercentileDisc {
        let at = ((fraction * sorted.len() as f64).ceil() as usize).saturating_sub(1);
        return Ok(sorted[at.min(last)].clone());
    }
    let position = fraction * last as f64;
    let (below, above) = (position.floor() as usize, position.ceil() as usize);
    let (low, high) = (as_f64(&sorted[below])?, as_f64(&sorted[above])?);
    Ok(Value::Double(
        low + (high - low) * (position - below as f64),
    ))
}

/// The value that occurs most often in `sorted`; of several, the first.
fn most_frequent(sorted: Vec<Value>) -> Value {
    let mut best: Option<(usize, &Value)> = None;
    let mut run = 0;
    for (at, value) in sorted.iter().enumerate() {
        run = if at > 0 && compare_rows(std::slice::from_ref(value), &sorted[at - 1..at]).is_eq() {
            run + 1
        } else {
            1
        };
        if best.is_none_or(|(count, _)| run > count) {
            best = Some((run, value));
        }
    }
    best.map(|(_, value)| value.clone()).unwrap_or(Value::Null)
}

fn as_f64(value: &Value) -> Result<f64> {
    match value.cast_to(&DataType::Double)? {
        Value::Double(v) => Ok(v),
        other => Err(SqlError::new(
            "XX000",
            format!("percentile_cont over {other:?}"),
        )),
    }
}
