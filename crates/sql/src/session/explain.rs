//! EXPLAIN [ANALYZE] [(ANALYZE, BUFFERS)]: the plan tree as text, one line per node with its
//! conditions below it; with ANALYZE the statement runs and each node shows the rows it returned
//! and, with BUFFERS, the buffer-pool pages its thread hit and read (inclusive of its inputs, as in
//! PostgreSQL).

use sqlparser::ast;
use steady_engine::io::{thread_io, ThreadIo};
use steady_types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::executor::{collect, ExecCtx, NodeStats};
use crate::execution::plan::{Column, Plan};
use crate::planner::bind::Binder;
use crate::session::QueryResult;

struct Options {
    analyze: bool,
    buffers: bool,
}

fn options(analyze: bool, given: Option<&[ast::UtilityOption]>) -> Result<Options> {
    let mut options = Options {
        analyze,
        buffers: false,
    };
    for option in given.unwrap_or_default() {
        let on = match &option.arg {
            None => true,
            Some(arg) => !matches!(
                arg.to_string().to_lowercase().as_str(),
                "false" | "off" | "0"
            ),
        };
        match option.name.value.to_lowercase().as_str() {
            "analyze" => options.analyze = on,
            "buffers" => options.buffers = on,
            "verbose" | "costs" | "timing" | "summary" | "format" | "settings" | "wal" => {}
            other => {
                return Err(SqlError::syntax(format!(
                    "unrecognized EXPLAIN option \"{other}\""
                )))
            }
        }
    }
    Ok(options)
}

pub fn explain(
    binder: &mut Binder,
    ctx: &mut ExecCtx,
    statement: &ast::Statement,
    analyze: bool,
    given: Option<&[ast::UtilityOption]>,
) -> Result<QueryResult> {
    let options = options(analyze, given)?;
    let Some(bound) = binder.bind_statement(statement)? else {
        return Err(SqlError::unsupported(format!("EXPLAIN of {statement}")));
    };
    ctx.check_privileges(&bound.required)?;
    let mut lines = Vec::new();
    if matches!(
        bound.plan,
        Plan::Insert(_) | Plan::Update(_) | Plan::Delete(_)
    ) {
        explain_write(&bound.plan, ctx, &options, &mut lines)?;
    } else {
        let stats = if options.analyze {
            ctx.node_stats = Some(Vec::new());
            collect(&bound.plan, ctx)?;
            ctx.node_stats.take()
        } else {
            None
        };
        render(
            &bound.plan,
            0,
            &mut 0,
            stats.as_deref(),
            options.buffers,
            &mut lines,
        );
    }
    let rows = lines.into_iter().map(|l| vec![Value::Text(l)]).collect();
    Ok(QueryResult::rows(
        "EXPLAIN",
        vec![Column::new("QUERY PLAN", Some(DataType::Text))],
        rows,
    ))
}

/// A write node with the rows it wrote (under ANALYZE: it runs, uninstrumented below) and its
/// details (a DELETE's or UPDATE's ORDER BY and LIMIT), then the plan that finds its rows.
fn explain_write(
    plan: &Plan,
    ctx: &mut ExecCtx,
    options: &Options,
    lines: &mut Vec<String>,
) -> Result<()> {
    let mut root = plan.label();
    if options.analyze {
        let before = thread_io();
        collect(plan, ctx)?;
        let io = thread_io().since(before);
        let rows = ctx.take_changed().unwrap_or(0);
        root = format!("{root} (actual rows={rows} loops=1)");
        lines.push(root);
        if options.buffers {
            lines.push(format!("  {}", buffers_line(io)));
        }
    } else {
        lines.push(root);
    }
    lines.extend(
        plan.details()
            .into_iter()
            .map(|detail| format!("  {detail}")),
    );
    for child in plan.children() {
        render(child, 1, &mut 0, None, false, lines);
    }
    Ok(())
}

/// Appends the lines of `plan` (and its inputs) at `depth`. Projections are not shown (as in
/// PostgreSQL, where every node projects); they still count in the node numbering.
fn render(
    plan: &Plan,
    depth: usize,
    number: &mut usize,
    stats: Option<&[NodeStats]>,
    buffers: bool,
    lines: &mut Vec<String>,
) {
    if let Plan::Project { input, .. } = plan {
        *number += 1;
        return render(input, depth, number, stats, buffers, lines);
    }
    render_node(plan, depth, number, stats, buffers, lines);
}

/// Appends one node's lines, then its inputs'.
fn render_node(
    plan: &Plan,
    depth: usize,
    number: &mut usize,
    stats: Option<&[NodeStats]>,
    buffers: bool,
    lines: &mut Vec<String>,
) {
    let node = *number;
    *number += 1;
    let indent = if depth == 0 {
        String::new()
    } else {
        " ".repeat(2 + 6 * (depth - 1))
    };
    let arrow = if depth == 0 { "" } else { "->  " };
    let mut line = format!("{indent}{arrow}{}", plan.label());
    let node_stats = stats.map(|s| s.get(node).copied().unwrap_or_default());
    if let Some(s) = node_stats {
        line.push_str(&format!(
            " (actual rows={} loops={})",
            s.rows,
            s.loops.max(1)
        ));
    }
    lines.push(line);
    let detail_indent = " ".repeat(if depth == 0 { 2 } else { 2 + 6 * depth });
    for detail in plan.details() {
        lines.push(format!("{detail_indent}{detail}"));
    }
    if let (Some(s), true) = (node_stats, buffers) {
        lines.push(format!("{detail_indent}{}", buffers_line(s.io)));
    }
    for child in plan.children() {
        render(child, depth + 1, number, stats, buffers, lines);
    }
}

/// PostgreSQL's buffers line, with the hits on pages read ahead for the node when there were any.
fn buffers_line(io: ThreadIo) -> String {
    let mut line = format!("Buffers: shared hit={} read={}", io.hits, io.reads);
    if io.read_ahead > 0 {
        line.push_str(&format!(" read ahead={}", io.read_ahead));
    }
    line
}
