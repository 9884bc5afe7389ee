//! Binding window function calls: `f(args) OVER (...)` or `OVER name` with a `WINDOW name AS
//! (...)` clause. Calls are allowed in the select list and ORDER BY only; each binds to
//! `Expr::WindowRef(i)` while the select is bound, and [`Binder::place_windows`] then puts a
//! [`Plan::Window`] above the FROM/WHERE/GROUP BY plan and turns each reference into the column the
//! node adds. Aggregates are allowed inside a window call's arguments, PARTITION BY and ORDER BY
//! (they are the grouped query's aggregates); window calls cannot nest.
//!
//! Frames: ROWS, GROUPS and RANGE, a RANGE offset in the ORDER BY key's type (numbers) or as an
//! interval (dates and times). Refused with 0A000: DISTINCT or ORDER BY inside a window
//! aggregate, a RANGE offset over a key of another type, EXCLUDE (which the parser does not
//! take).

use super::*;
use crate::execution::aggregate::AggFunc;
use crate::execution::window::{Frame, FrameBound, FrameUnits, WindowCall, WindowFunc};

impl Binder<'_> {
    /// Binds `name(args) OVER ...` into a window reference.
    pub(crate) fn bind_window(
        &mut self,
        name: &str,
        function: &ast::Function,
        list: Option<&ast::FunctionArgumentList>,
        scope: &Scope,
    ) -> Result<Typed> {
        let Some(mut windows) = self.windows.take() else {
            return Err(SqlError::new(
                "42P20",
                "window functions are not allowed here",
            ));
        };
        let bound = self.bind_window_call(name, function, list, scope);
        let (call, ty) = match bound {
            Ok(bound) => bound,
            Err(err) => {
                self.windows = Some(windows);
                return Err(err);
            }
        };
        windows.push(call);
        let reference = Expr::WindowRef(windows.len() - 1);
        self.windows = Some(windows);
        Ok((reference, ty))
    }

    fn bind_window_call(
        &mut self,
        name: &str,
        function: &ast::Function,
        list: Option<&ast::FunctionArgumentList>,
        scope: &Scope,
    ) -> Result<(WindowCall, Option<DataType>)> {
        let spec = self.window_spec(function.over.as_ref())?;
        let (func, args, ty) = if let Some(aggregate) = AggFunc::by_name(name) {
            self.bind_window_aggregate(aggregate, function, list, scope)?
        } else if let Some(func) = WindowFunc::by_name(name) {
            self.bind_window_function(func, name, list, scope)?
        } else {
            return Err(SqlError::new(
                "42809",
                format!(
                    "OVER specified, but {name} is not a window function nor an aggregate function"
                ),
            ));
        };
        let partition = spec
            .partition_by
            .iter()
            .map(|e| self.bind_expr(e, scope).map(|(e, _)| e))
            .collect::<Result<Vec<_>>>()?;
        let mut order = Vec::with_capacity(spec.order_by.len());
        let mut order_types = Vec::with_capacity(spec.order_by.len());
        for item in &spec.order_by {
            let (expr, ty) = self.bind_expr(&item.expr, scope)?;
            order.push(sort_key(ordered_array(expr, ty), &item.options)?);
            order_types.push(ty);
        }
        let frame = match &spec.window_frame {
            None => Frame::default(),
            Some(frame) => self.bind_frame(frame, &order_types, scope)?,
        };
        let call = WindowCall {
            func,
            args,
            partition,
            order,
            frame,
        };
        Ok((call, ty))
    }

    /// The window a call names: inline, by name, or inline over a named base window.
    fn window_spec(&self, over: Option<&ast::WindowType>) -> Result<ast::WindowSpec> {
        let spec = match over {
            Some(ast::WindowType::WindowSpec(spec)) => spec.clone(),
            Some(ast::WindowType::NamedWindow(name)) => {
                return self.named_window(&normalize_ident(name))
            }
            None => return Err(SqlError::new("XX000", "a window call without OVER")),
        };
        let Some(base) = &spec.window_name else {
            return Ok(spec);
        };
        let base_name = normalize_ident(base);
        let base = self.named_window(&base_name)?;
        if !spec.partition_by.is_empty() {
            return Err(SqlError::new(
                "42P20",
                format!("cannot override PARTITION BY clause of window \"{base_name}\""),
            ));
        }
        if !spec.order_by.is_empty() && !base.order_by.is_empty() {
            return Err(SqlError::new(
                "42P20",
                format!("cannot override ORDER BY clause of window \"{base_name}\""),
            ));
        }
        if base.window_frame.is_some() {
            return Err(SqlError::new(
                "42P20",
                format!("cannot copy window \"{base_name}\" because it has a frame clause"),
            ));
        }
        Ok(ast::WindowSpec {
            window_name: None,
            partition_by: base.partition_by,
            order_by: if spec.order_by.is_empty() {
                base.order_by
            } else {
                spec.order_by
            },
            window_frame: spec.window_frame,
        })
    }

    fn named_window(&self, name: &str) -> Result<ast::WindowSpec> {
        let found = self
            .named_windows
            .iter()
            .find(|definition| normalize_ident(&definition.0) == name);
        match found.map(|definition| &definition.1) {
            Some(ast::NamedWindowExpr::WindowSpec(spec)) => Ok(spec.clone()),
            Some(ast::NamedWindowExpr::NamedWindow(other)) => {
                self.named_window(&normalize_ident(other))
            }
            None => Err(SqlError::new(
                "42704",
                format!("window \"{name}\" does not exist"),
            )),
        }
    }

    /// An aggregate used as a window function: over the frame, FILTER allowed.
    fn bind_window_aggregate(
        &mut self,
        aggregate: AggFunc,
        function: &ast::Function,
        list: Option<&ast::FunctionArgumentList>,
        scope: &Scope,
    ) -> Result<(WindowFunc, Vec<Expr>, Option<DataType>)> {
        if aggregate == AggFunc::Grouping {
            return Err(SqlError::unsupported("GROUPING as a window function"));
        }
        let call = self.bind_aggregate_call(aggregate, function, list, scope)?;
        if call.distinct {
            return Err(SqlError::unsupported(
                "DISTINCT in an aggregate used as a window function",
            ));
        }
        if !call.order_by.is_empty() {
            return Err(SqlError::unsupported(
                "ORDER BY inside an aggregate used as a window function",
            ));
        }
        let ty = call.ty;
        Ok((WindowFunc::Aggregate(call), Vec::new(), ty))
    }

    /// A window-only function's arguments: the value first; `lag`/`lead`'s offset, `ntile`'s
    /// buckets and `nth_value`'s position as integers; `lag`/`lead`'s default as the value's type.
    fn bind_window_function(
        &mut self,
        func: WindowFunc,
        name: &str,
        list: Option<&ast::FunctionArgumentList>,
        scope: &Scope,
    ) -> Result<(WindowFunc, Vec<Expr>, Option<DataType>)> {
        let raw = list.map(|l| l.args.as_slice()).unwrap_or_default();
        let (least, most) = func.arity();
        if !(least..=most).contains(&raw.len()) {
            return Err(SqlError::undefined_function(format!(
                "function {name} with {} arguments does not exist",
                raw.len()
            )));
        }
        let integer_at = match func {
            WindowFunc::Ntile => Some(0),
            WindowFunc::Lag | WindowFunc::Lead | WindowFunc::NthValue => Some(1),
            _ => None,
        };
        let mut args = Vec::with_capacity(raw.len());
        let mut first = None;
        for (i, arg) in raw.iter().enumerate() {
            let arg = crate::planner::bind_expr::call::plain_arg(arg)?;
            let expr = if integer_at == Some(i) {
                self.bind_expr_as(arg, scope, DataType::BigInt)?.0
            } else if i == 2 {
                let (expr, ty) = self.bind_expr(arg, scope)?;
                match first {
                    Some(target) => coerce_to(expr, ty, target)?,
                    None => expr,
                }
            } else {
                let (expr, ty) = self.bind_expr(arg, scope)?;
                first = ty;
                expr
            };
            args.push(expr);
        }
        let first = if integer_at == Some(0) { None } else { first };
        let ty = func.result_type(first);
        Ok((func, args, ty))
    }

    /// A frame clause; `order_types` are the types of the window's ORDER BY keys, which a RANGE
    /// offset is measured in.
    fn bind_frame(
        &mut self,
        frame: &ast::WindowFrame,
        order_types: &[Option<DataType>],
        scope: &Scope,
    ) -> Result<Frame> {
        let units = match frame.units {
            ast::WindowFrameUnits::Rows => FrameUnits::Rows,
            ast::WindowFrameUnits::Range => FrameUnits::Range,
            ast::WindowFrameUnits::Groups => FrameUnits::Groups,
        };
        let bounds = [Some(&frame.start_bound), frame.end_bound.as_ref()];
        let has_offset = bounds.iter().flatten().any(|b| {
            matches!(
                b,
                ast::WindowFrameBound::Preceding(Some(_))
                    | ast::WindowFrameBound::Following(Some(_))
            )
        });
        let offset_type = match units {
            FrameUnits::Range if has_offset => Some(range_offset_type(order_types)?),
            FrameUnits::Groups if order_types.is_empty() => {
                return Err(SqlError::new(
                    "42P20",
                    "GROUPS mode requires an ORDER BY clause",
                ))
            }
            _ => None,
        };
        let start = self.bind_frame_bound(&frame.start_bound, units, offset_type, scope)?;
        let end = match &frame.end_bound {
            Some(bound) => self.bind_frame_bound(bound, units, offset_type, scope)?,
            None => FrameBound::CurrentRow,
        };
        check_frame(&start, &end)?;
        Ok(Frame { units, start, end })
    }

    /// A frame bound; an offset is a constant of `offset_type` for RANGE, an integer otherwise.
    fn bind_frame_bound(
        &mut self,
        bound: &ast::WindowFrameBound,
        units: FrameUnits,
        offset_type: Option<(DataType, DataType)>,
        scope: &Scope,
    ) -> Result<FrameBound> {
        let offset = |binder: &mut Self, e: &AstExpr| -> Result<Expr> {
            let (offset, _) = match offset_type {
                Some((column, ty)) => {
                    let (offset, given) = binder.bind_expr(e, scope)?;
                    range_offset_fits(column, ty, given)?;
                    (coerce_to(offset, given, ty)?, Some(ty))
                }
                None => binder.bind_expr_as(e, scope, DataType::BigInt)?,
            };
            if offset.uses_columns() {
                let mode = match units {
                    FrameUnits::Rows => "ROWS",
                    FrameUnits::Range => "RANGE",
                    FrameUnits::Groups => "GROUPS",
                };
                return Err(SqlError::new(
                    "42P10",
                    format!("argument of {mode} must not contain variables"),
                ));
            }
            Ok(offset)
        };
        Ok(match bound {
            ast::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
            ast::WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
            ast::WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
            ast::WindowFrameBound::Preceding(Some(e)) => FrameBound::Preceding(offset(self, e)?),
            ast::WindowFrameBound::Following(Some(e)) => FrameBound::Following(offset(self, e)?),
        })
    }

    /// Puts the window node above `plan` (whose rows are `width` wide) when the select has window
    /// calls, and turns their references in `exprs` (the select's outputs, sort keys...) into its
    /// columns.
    pub(super) fn place_windows<'e>(
        &mut self,
        plan: Plan,
        width: usize,
        calls: Vec<WindowCall>,
        exprs: impl Iterator<Item = &'e mut Expr>,
    ) -> Result<Plan> {
        if calls.is_empty() {
            return Ok(plan);
        }
        for expr in exprs {
            *expr = window_columns(expr.clone(), width)?;
        }
        Ok(Plan::Window {
            input: Box::new(plan),
            calls,
        })
    }
}

/// A RANGE offset of type `given` over an ORDER BY key of type `column`, measured in `ty`: a
/// number for a number key, an interval for a date or time (an untyped literal becomes one);
/// another type is refused (0A000), as PostgreSQL does.
fn range_offset_fits(column: DataType, ty: DataType, given: Option<DataType>) -> Result<()> {
    let integer =
        |t: &DataType| matches!(t, DataType::SmallInt | DataType::Integer | DataType::BigInt);
    // An integer key takes an integer offset only (a fraction would be cut off).
    let fits = match given {
        None => true,
        Some(given) if integer(&ty) => integer(&given),
        Some(given) => ops::category(&given) == ops::category(&ty),
    };
    if fits {
        return Ok(());
    }
    Err(SqlError::new(
        "0A000",
        format!(
            "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {column} and offset type {}",
            crate::types::type_name(given)
        ),
    )
    .with_hint("Cast the offset value to an appropriate type."))
}

/// The ORDER BY key's type and the type a RANGE frame's offset is given in: the key's own for
/// numbers, interval for dates and times. PostgreSQL's rules: exactly one ORDER BY key (42P20),
/// of a type with such arithmetic (0A000 otherwise).
fn range_offset_type(order_types: &[Option<DataType>]) -> Result<(DataType, DataType)> {
    let [ty] = order_types else {
        return Err(SqlError::new(
            "42P20",
            "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
        ));
    };
    match ty {
        Some(
            ty @ (DataType::SmallInt
            | DataType::Integer
            | DataType::BigInt
            | DataType::Real
            | DataType::Double
            | DataType::Numeric { .. }),
        ) => Ok((*ty, *ty)),
        Some(
            ty @ (DataType::Date
            | DataType::Timestamp
            | DataType::TimestampTz
            | DataType::Time
            | DataType::Interval),
        ) => Ok((*ty, DataType::Interval)),
        other => Err(SqlError::new(
            "0A000",
            format!(
                "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {}",
                crate::types::type_name(*other)
            ),
        )),
    }
}

/// PostgreSQL's rules on frame bounds (42P20).
fn check_frame(start: &FrameBound, end: &FrameBound) -> Result<()> {
    use FrameBound::*;
    let refused = match (start, end) {
        (UnboundedFollowing, _) => "frame start cannot be UNBOUNDED FOLLOWING",
        (_, UnboundedPreceding) => "frame end cannot be UNBOUNDED PRECEDING",
        (CurrentRow, Preceding(_)) => "frame starting from current row cannot have preceding rows",
        (Following(_), Preceding(_) | CurrentRow) => {
            "frame starting from following row cannot have preceding rows"
        }
        _ => return Ok(()),
    };
    Err(SqlError::new("42P20", refused))
}

/// `expr` with each window reference turned into the window node's column.
fn window_columns(expr: Expr, width: usize) -> Result<Expr> {
    match expr {
        Expr::WindowRef(i) => Ok(Expr::Column(width + i)),
        other => other.map_children(&mut |child| window_columns(child, width)),
    }
}

/// A window call with `map` applied to every expression it reads (a grouped query's calls read
/// the aggregate's output).
pub(super) fn map_window_exprs(
    mut call: WindowCall,
    map: &mut impl FnMut(Expr) -> Result<Expr>,
) -> Result<WindowCall> {
    let mut each = |exprs: Vec<Expr>| exprs.into_iter().map(&mut *map).collect::<Result<Vec<_>>>();
    call.args = each(std::mem::take(&mut call.args))?;
    call.partition = each(std::mem::take(&mut call.partition))?;
    for key in &mut call.order {
        key.expr = map(key.expr.clone())?;
    }
    if let WindowFunc::Aggregate(aggregate) = &mut call.func {
        aggregate.args = aggregate
            .args
            .drain(..)
            .map(&mut *map)
            .collect::<Result<_>>()?;
        aggregate.filter = aggregate.filter.take().map(&mut *map).transpose()?;
    }
    Ok(call)
}
