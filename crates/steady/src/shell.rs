//! `steady shell [DIR]`: an embedded SQL session on a data directory, in the manner of psql.
//!
//! Owns the read-split-run-print loop: input comes from rustyline on a terminal (prompt, line
//! editing, history in `DIR/.steady_history`) or line by line from a pipe (no prompt; messages
//! say which line they come from); [`Pending`] cuts it into statements; results print in psql's
//! aligned format; errors and notices go to stderr as `ERROR:  SQLSTATE: message`; lines starting
//! with a backslash are meta commands (`\?` lists them). A file redirected into the shell (a bulk
//! load, such as a plain dump) shows a bar of the bytes run so far when stderr is a terminal
//! ([`crate::progress`]); output is printed with the bar cleared.
//!
//! Invariants: a statement reaches the session only when complete — through a `;` outside quotes,
//! dollar quotes and comments — or at the end of piped input, and one at a time, so a failing
//! statement never takes the rest of its line with it. After an error the session goes on, unless
//! `--stop-on-error` was given: then the shell ends with status 3 (psql's ON_ERROR_STOP). The
//! engine is closed cleanly (a checkpoint) however the loop ends, an open block being rolled back.

use std::io::{BufRead, IsTerminal, Write};
use std::os::fd::AsFd;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use indicatif::ProgressBar;
use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;
use steady_engine::catalog::TableDef;
use steady_engine::engine::{Engine, EngineConfig};
use steady_sql::execution::constraints::{foreign_keys, is_hidden};
use steady_sql::execution::plan::Column;
use steady_sql::system::{column_list, index_predicate};
use steady_sql::values::{DataType, Value};
use steady_sql::{Database, QueryResult, Session, SqlError, TransactionStatus};
use steady_storage::store::StoreConfig;

/// The database and user a session runs as, which the prompt shows.
const NAME: &str = "steady";

const HISTORY_FILE: &str = ".steady_history";

/// The exit status after a failure under `--stop-on-error`, as psql's with ON_ERROR_STOP.
const STOPPED_ON_ERROR: u8 = 3;

const HELP: &str = "\
General
  \\q                 quit
  \\timing [on|off]   show how long each statement takes
Informational
  \\d NAME            describe table NAME: columns, indexes, foreign keys
  \\d, \\dt            list tables
  \\?                 this help
Anything else is SQL: a statement ends with ; and may span lines.
Ctrl-C clears the statement being typed; Ctrl-D quits.
";

/// How `steady shell` runs.
pub struct Options {
    /// The page size of a new directory.
    pub page_size: usize,
    /// End at the first failure, with exit status 3.
    pub stop_on_error: bool,
}

pub fn run(dir: &Path, options: &Options) -> anyhow::Result<ExitCode> {
    let config = EngineConfig {
        store: StoreConfig {
            page_size: options.page_size,
            recovery_watch: crate::progress::recovery_watch(),
            ..StoreConfig::default()
        },
        ..EngineConfig::default()
    };
    crate::data_dir::check(dir, &[])?;
    let engine =
        Engine::open(dir, &config).with_context(|| format!("opening {}", dir.display()))?;
    let db = Database::new(Arc::clone(&engine), NAME);
    let interactive = std::io::stdin().is_terminal();
    let mut shell = Shell {
        session: db.session(NAME),
        pending: Pending::default(),
        timing: false,
        stop_on_error: options.stop_on_error,
        script_line: (!interactive).then_some(0),
        load: None,
    };
    let outcome = if interactive {
        shell.interactive(dir)
    } else {
        shell.load = piped_file_size().map(|size| crate::progress::byte_bar(size, "loading"));
        shell.script(std::io::stdin().lock())
    };
    drop(shell);
    drop(db);
    engine.close().context("closing the database")?;
    outcome
}

/// A session and the input read for it but not yet run.
struct Shell {
    session: Session,
    pending: Pending,
    timing: bool,
    stop_on_error: bool,
    /// The line of piped input being read (`None` on a terminal), to say where a message comes from.
    script_line: Option<usize>,
    /// The bytes of a piped file run so far, when stdin is a file (a bulk load).
    load: Option<ProgressBar>,
}

/// The size of the file stdin reads, if it is a regular file.
fn piped_file_size() -> Option<u64> {
    let stdin = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let metadata = std::fs::File::from(stdin).metadata().ok()?;
    metadata.is_file().then_some(metadata.len())
}

/// Whether to read on.
enum Flow {
    Continue,
    Quit(ExitCode),
}

impl Shell {
    fn interactive(&mut self, dir: &Path) -> anyhow::Result<ExitCode> {
        let mut editor = DefaultEditor::new()?;
        let history = dir.join(HISTORY_FILE);
        if history.exists() {
            editor.load_history(&history)?;
        }
        println!(
            "SteadyDB shell on {}. Type \\? for help, \\q to quit.",
            dir.display()
        );
        let code = loop {
            match editor.readline(&self.prompt()) {
                Ok(line) => {
                    editor.add_history_entry(line.as_str())?;
                    if let Flow::Quit(code) = self.handle_line(&line)? {
                        break code;
                    }
                }
                Err(ReadlineError::Interrupted) => self.pending.clear(),
                Err(ReadlineError::Eof) => {
                    println!("\\q");
                    break ExitCode::SUCCESS;
                }
                Err(err) => return Err(err.into()),
            }
        };
        editor.save_history(&history)?;
        Ok(code)
    }

    /// Runs piped input to its end, then whatever statement it left without a `;`.
    fn script(&mut self, input: impl BufRead) -> anyhow::Result<ExitCode> {
        for (index, line) in input.lines().enumerate() {
            self.script_line = Some(index + 1);
            let line = line?;
            if let Some(load) = &self.load {
                load.inc(line.len() as u64 + 1);
            }
            if let Flow::Quit(code) = self.handle_line(&line)? {
                return Ok(code);
            }
        }
        if let Some(load) = self.load.take() {
            load.finish_and_clear();
        }
        let flow = match self.pending.take_rest() {
            Some(sql) => self.execute(&sql)?,
            None => Flow::Continue,
        };
        Ok(match flow {
            Flow::Quit(code) => code,
            Flow::Continue => ExitCode::SUCCESS,
        })
    }

    /// psql's prompt: `steady=> `, `-` for `=` while a statement goes on (`'`, `"`, `$` or `*`
    /// inside a quote or comment), then `*` in a transaction block or `!` in a failed one.
    fn prompt(&self) -> String {
        let status = match self.session.transaction_status() {
            TransactionStatus::Idle => "",
            TransactionStatus::InBlock => "*",
            TransactionStatus::Failed => "!",
        };
        format!("{NAME}{}{status}> ", self.pending.prompt_char())
    }

    fn handle_line(&mut self, line: &str) -> anyhow::Result<Flow> {
        if self.pending.in_code() && line.trim_start().starts_with('\\') {
            return self.meta(line.trim());
        }
        self.pending.push_line(line);
        while let Some(sql) = self.pending.take_statement() {
            if let Flow::Quit(code) = self.execute(&sql)? {
                return Ok(Flow::Quit(code));
            }
        }
        Ok(Flow::Continue)
    }

    fn execute(&mut self, sql: &str) -> anyhow::Result<Flow> {
        let started = Instant::now();
        let results = self.session.execute(sql);
        let elapsed = started.elapsed();
        self.above_the_bar(|shell| {
            let mut flow = Flow::Continue;
            for result in results {
                match result {
                    Ok(result) => shell.print_result(&result)?,
                    Err(err) => flow = shell.report_error(&err),
                }
            }
            if shell.timing {
                write_out(&format!("Time: {:.3} ms\n", elapsed.as_secs_f64() * 1000.0))?;
            }
            Ok(flow)
        })
    }

    /// Runs `print` with the load's bar (if any) cleared, so what it writes is not drawn over.
    fn above_the_bar<T>(&self, print: impl FnOnce(&Self) -> T) -> T {
        match &self.load {
            Some(load) => load.suspend(|| print(self)),
            None => print(self),
        }
    }

    fn print_result(&self, result: &QueryResult) -> std::io::Result<()> {
        for notice in &result.notices {
            self.message(notice.severity, &notice.message);
            if let Some(detail) = &notice.detail {
                eprintln!("DETAIL:  {detail}");
            }
        }
        if result.has_rows() {
            write_out(&result_table(result).render_with_count())
        } else {
            write_out(&format!("{}\n", result.tag))
        }
    }

    fn report_error(&self, err: &SqlError) -> Flow {
        self.message("ERROR", &err.to_string());
        if let Some(detail) = &err.detail {
            eprintln!("DETAIL:  {detail}");
        }
        if let Some(hint) = &err.hint {
            eprintln!("HINT:  {hint}");
        }
        self.after_error()
    }

    /// A message on stderr as psql writes it, after where it was read when that is a script.
    fn message(&self, severity: &str, text: &str) {
        let place = self
            .script_line
            .map_or_else(String::new, |line| format!("steady:<stdin>:{line}: "));
        eprintln!("{place}{severity}:  {text}");
    }

    fn after_error(&self) -> Flow {
        if self.stop_on_error {
            Flow::Quit(ExitCode::from(STOPPED_ON_ERROR))
        } else {
            Flow::Continue
        }
    }

    fn meta(&mut self, line: &str) -> anyhow::Result<Flow> {
        let mut words = line.split_whitespace();
        let command = words.next().unwrap_or_default();
        let arg = words.next();
        let engine = self.session.database().engine();
        match (command, arg) {
            ("\\q", _) => return Ok(Flow::Quit(ExitCode::SUCCESS)),
            ("\\?", _) => write_out(HELP)?,
            ("\\timing", _) => return self.set_timing(arg),
            ("\\dt", _) | ("\\d", None) => write_out(&list_tables(engine))?,
            ("\\d", Some(name)) => match engine.table(&fold_name(name)) {
                Some(table) => write_out(&describe(engine, &table))?,
                None => {
                    eprintln!("Did not find any relation named \"{name}\".");
                    return Ok(self.after_error());
                }
            },
            _ => {
                eprintln!("invalid command {command}\nTry \\? for help.");
                return Ok(self.after_error());
            }
        }
        Ok(Flow::Continue)
    }

    fn set_timing(&mut self, arg: Option<&str>) -> anyhow::Result<Flow> {
        self.timing = match arg {
            None => !self.timing,
            Some("on") => true,
            Some("off") => false,
            Some(other) => {
                eprintln!("unrecognized value \"{other}\" for \"\\timing\": on or off expected");
                return Ok(self.after_error());
            }
        };
        let state = if self.timing { "on" } else { "off" };
        write_out(&format!("Timing is {state}.\n"))?;
        Ok(Flow::Continue)
    }
}

fn write_out(text: &str) -> std::io::Result<()> {
    std::io::stdout().lock().write_all(text.as_bytes())
}

/// A table name as SQL folds it: lower case unless double-quoted.
fn fold_name(name: &str) -> String {
    match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(quoted) => quoted.to_owned(),
        None => name.to_lowercase(),
    }
}

fn list_tables(engine: &Engine) -> String {
    let tables = engine.tables();
    if tables.is_empty() {
        return "Did not find any relations.\n".to_owned();
    }
    let row =
        |t: &Arc<TableDef>| vec!["public".into(), t.name.clone(), "table".into(), NAME.into()];
    Table {
        title: Some("List of relations".into()),
        headers: vec![
            "Schema".into(),
            "Name".into(),
            "Type".into(),
            "Owner".into(),
        ],
        right: vec![false; 4],
        rows: tables.iter().map(row).collect(),
    }
    .render_with_count()
}

/// psql's `\d NAME`: the columns, then the indexes and foreign keys.
fn describe(engine: &Engine, table: &TableDef) -> String {
    let rows = table
        .columns
        .iter()
        .enumerate()
        .filter(|(_, column)| !is_hidden(&column.name))
        .map(|(position, column)| {
            let not_null = !column.nullable || table.primary_key.contains(&position);
            vec![
                column.name.clone(),
                column.data_type.to_string(),
                if not_null { "not null" } else { "" }.to_owned(),
                column.default.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let columns = Table {
        title: Some(format!("Table \"public.{}\"", table.name)),
        headers: vec![
            "Column".into(),
            "Type".into(),
            "Nullable".into(),
            "Default".into(),
        ],
        right: vec![false; 4],
        rows,
    };
    format!(
        "{}{}{}\n",
        columns.render(),
        index_lines(table),
        foreign_key_lines(engine, table)
    )
}

fn index_lines(table: &TableDef) -> String {
    let mut lines = Vec::new();
    if !table.primary_key.is_empty() {
        lines.push(format!(
            "    \"{}_pkey\" PRIMARY KEY, btree ({})",
            table.name,
            column_list(table, &table.primary_key)
        ));
    }
    for index in &table.indexes {
        let unique = if index.unique { "UNIQUE, " } else { "" };
        let columns = column_list(table, &index.columns);
        let predicate = index_predicate(table, &index.columns)
            .map(|p| format!(" WHERE {p}"))
            .unwrap_or_default();
        lines.push(format!(
            "    \"{}\" {unique}btree ({columns}){predicate}",
            index.name
        ));
    }
    section("Indexes:", &lines)
}

fn foreign_key_lines(engine: &Engine, table: &TableDef) -> String {
    let lines: Vec<String> = foreign_keys(table)
        .into_iter()
        .map(|fk| {
            let referenced = engine
                .table(&fk.table)
                .map(|parent| column_list(&parent, &fk.ref_columns))
                .unwrap_or_default();
            format!(
                "    \"{}\" FOREIGN KEY ({}) REFERENCES {}({referenced})",
                fk.name,
                column_list(table, &fk.columns),
                fk.table
            )
        })
        .collect();
    section("Foreign-key constraints:", &lines)
}

/// A heading and its lines, or nothing when there are none.
fn section(heading: &str, lines: &[String]) -> String {
    if lines.is_empty() {
        return String::new();
    }
    format!("{heading}\n{}\n", lines.join("\n"))
}

fn result_table(result: &QueryResult) -> Table {
    let cell = |(value, column): (&Value, &Column)| match value {
        Value::Null => String::new(),
        value => steady_sql::values::array::shown_text(value, column.ty.as_ref()),
    };
    Table {
        title: None,
        headers: result.columns.iter().map(|c| c.name.clone()).collect(),
        right: result
            .columns
            .iter()
            .map(|c| c.ty.as_ref().is_some_and(is_number))
            .collect(),
        rows: result
            .rows
            .iter()
            .map(|row| row.iter().zip(&result.columns).map(cell).collect())
            .collect(),
    }
}

/// Whether psql right-aligns values of this type.
fn is_number(ty: &DataType) -> bool {
    matches!(
        ty,
        DataType::SmallInt
            | DataType::Integer
            | DataType::BigInt
            | DataType::Real
            | DataType::Double
            | DataType::Numeric { .. }
    )
}

/// A table in psql's aligned format: an optional centered title, centered headers, a `-+-` rule,
/// cells left- or right-aligned. Lines carry no trailing blanks.
struct Table {
    title: Option<String>,
    headers: Vec<String>,
    /// Per column: aligned right (numbers) rather than left.
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn render(&self) -> String {
        let widths = self.widths();
        let mut out = String::new();
        if let Some(title) = &self.title {
            let total = widths.iter().map(|w| w + 3).sum::<usize>() - 1;
            push_line(&mut out, &centered(title, total));
        }
        let headers: Vec<String> = self
            .headers
            .iter()
            .zip(&widths)
            .map(|(header, &width)| centered(header, width))
            .collect();
        push_line(&mut out, &format!(" {} ", headers.join(" | ")));
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(w + 2)).collect();
        push_line(&mut out, &rule.join("+"));
        for row in &self.rows {
            push_line(&mut out, &format!(" {} ", self.aligned(row, &widths)));
        }
        out
    }

    /// The table, then psql's `(N rows)` and a blank line.
    fn render_with_count(&self) -> String {
        let n = self.rows.len();
        let rows = if n == 1 { "row" } else { "rows" };
        format!("{}({n} {rows})\n\n", self.render())
    }

    fn widths(&self) -> Vec<usize> {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        widths
    }

    fn aligned(&self, row: &[String], widths: &[usize]) -> String {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .zip(&self.right)
            .map(|((cell, &width), &right)| match right {
                true => format!("{cell:>width$}"),
                false => format!("{cell:<width$}"),
            })
            .collect();
        cells.join(" | ")
    }
}

fn centered(text: &str, width: usize) -> String {
    let pad = width.saturating_sub(text.chars().count());
    format!("{}{text}{}", " ".repeat(pad / 2), " ".repeat(pad - pad / 2))
}

fn push_line(out: &mut String, line: &str) {
    out.push_str(line.trim_end());
    out.push('\n');
}

/// Input read but not yet run, as whole lines. It is empty or holds the start of a statement:
/// complete statements are taken out as soon as they are there, and a remainder of nothing but
/// blanks and comments is dropped.
#[derive(Default)]
struct Pending {
    text: String,
}

impl Pending {
    fn push_line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// Takes out the first complete statement, through its `;`.
    fn take_statement(&mut self) -> Option<String> {
        let scanned = scan(&self.text);
        let Some(end) = scanned.end else {
            if scanned.lex == Lex::Code && !scanned.significant {
                self.text.clear();
            }
            return None;
        };
        let rest = self.text.split_off(end);
        Some(std::mem::replace(&mut self.text, rest))
    }

    /// Takes out an unfinished statement (at the end of the input).
    fn take_rest(&mut self) -> Option<String> {
        (!self.text.is_empty()).then(|| std::mem::take(&mut self.text))
    }

    fn clear(&mut self) {
        self.text.clear();
    }

    /// Whether the text ends outside quotes and comments, where a meta command may start.
    fn in_code(&self) -> bool {
        scan(&self.text).lex == Lex::Code
    }

    /// The character psql's prompt shows for this state.
    fn prompt_char(&self) -> char {
        if self.text.is_empty() {
            return '=';
        }
        match scan(&self.text).lex {
            Lex::Code | Lex::LineComment => '-',
            Lex::Quoted(quote) => char::from(quote),
            Lex::Escaped => '\'',
            Lex::BlockComment(_) => '*',
            Lex::Dollar(_) => '$',
        }
    }
}

/// Where a scan of SQL text is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Lex {
    Code,
    /// In a `'string'` or `"identifier"`: the quote that ends it.
    Quoted(u8),
    /// In an `E'string'`, where a backslash escapes the next character.
    Escaped,
    LineComment,
    /// In `/* ... */` comments nested this deep.
    BlockComment(usize),
    /// In a dollar-quoted string ended by this `$tag$`.
    Dollar(String),
}

/// What [`scan`] found.
struct Scanned {
    /// Where the first statement ends, just past its `;`.
    end: Option<usize>,
    /// The state where the scan stopped.
    lex: Lex,
    /// Whether anything but blanks and comments came before that.
    significant: bool,
}

/// Scans `text` up to the end of its first statement, or to its end.
fn scan(text: &str) -> Scanned {
    let bytes = text.as_bytes();
    let mut scanned = Scanned {
        end: None,
        lex: Lex::Code,
        significant: false,
    };
    let mut at = 0;
    while at < bytes.len() {
        let was_code = scanned.lex == Lex::Code;
        if was_code && bytes[at] == b';' {
            scanned.end = Some(at + 1);
            break;
        }
        let byte = bytes[at];
        at = step(&mut scanned.lex, bytes, at);
        let in_comment = matches!(scanned.lex, Lex::LineComment | Lex::BlockComment(_));
        scanned.significant |= was_code && !byte.is_ascii_whitespace() && !in_comment;
    }
    scanned
}

/// Moves over the token at `at`; returns where the next one starts.
fn step(lex: &mut Lex, bytes: &[u8], at: usize) -> usize {
    let rest = &bytes[at..];
    match lex {
        Lex::Code => return step_code(lex, bytes, at),
        Lex::Quoted(quote) if rest[0] == *quote => *lex = Lex::Code,
        Lex::Escaped if rest[0] == b'\\' => return at + 2,
        Lex::Escaped if rest[0] == b'\'' => *lex = Lex::Code,
        Lex::LineComment if rest[0] == b'\n' => *lex = Lex::Code,
        Lex::BlockComment(depth) if rest.starts_with(b"/*") => {
            *depth += 1;
            return at + 2;
        }
        Lex::BlockComment(depth) if rest.starts_with(b"*/") => {
            match *depth {
                1 => *lex = Lex::Code,
                _ => *depth -= 1,
            }
            return at + 2;
        }
        Lex::Dollar(tag) if rest.starts_with(tag.as_bytes()) => {
            let len = tag.len();
            *lex = Lex::Code;
            return at + len;
        }
        _ => {}
    }
    at + 1
}

fn step_code(lex: &mut Lex, bytes: &[u8], at: usize) -> usize {
    let rest = &bytes[at..];
    let word_before = |back: usize| at >= back && is_word_byte(bytes[at - back]);
    match rest[0] {
        b'\'' if word_before(1) && bytes[at - 1].eq_ignore_ascii_case(&b'e') && !word_before(2) => {
            *lex = Lex::Escaped;
        }
        b'\'' | b'"' => *lex = Lex::Quoted(rest[0]),
        b'-' if rest.starts_with(b"--") => {
            *lex = Lex::LineComment;
            return at + 2;
        }
        b'/' if rest.starts_with(b"/*") => {
            *lex = Lex::BlockComment(1);
            return at + 2;
        }
        b'$' if !word_before(1) => {
            if let Some(tag) = dollar_tag(rest) {
                let len = tag.len();
                *lex = Lex::Dollar(tag);
                return at + len;
            }
        }
        _ => {}
    }
    at + 1
}

/// The `$tag$` that opens a dollar-quoted string at the start of `rest`, if one does.
fn dollar_tag(rest: &[u8]) -> Option<String> {
    let close = rest[1..].iter().position(|&b| !is_word_byte(b))? + 1;
    let starts_with_digit = rest[1..close].first().is_some_and(u8::is_ascii_digit);
    (rest[close] == b'$' && !starts_with_digit)
        .then(|| String::from_utf8_lossy(&rest[..=close]).into_owned())
}

/// A byte that may be part of an identifier (non-ASCII letters included).
fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statements(lines: &[&str]) -> (Vec<String>, char) {
        let mut pending = Pending::default();
        let mut taken = Vec::new();
        for line in lines {
            pending.push_line(line);
            while let Some(sql) = pending.take_statement() {
                taken.push(sql.trim().to_owned());
            }
        }
        (taken, pending.prompt_char())
    }

    #[test]
    fn statements_end_at_semicolons_outside_quotes_and_comments() {
        let (taken, prompt) = statements(&[
            "SELECT 'a;b', \"c;d\" -- e;f",
            "/* g; /* nested; */ h; */ ;SELECT 1; SELECT E'i\\';j';",
            "SELECT $$k;l$$, $t$m;$$;$t$, $1;",
            "SELECT",
        ]);
        assert_eq!(
            taken,
            [
                "SELECT 'a;b', \"c;d\" -- e;f\n/* g; /* nested; */ h; */ ;",
                "SELECT 1;",
                "SELECT E'i\\';j';",
                "SELECT $$k;l$$, $t$m;$$;$t$, $1;",
            ]
        );
        assert_eq!(prompt, '-');
    }

    #[test]
    fn the_prompt_shows_an_open_quote_or_comment_and_blank_input_is_dropped() {
        assert_eq!(statements(&["SELECT 'a"]).1, '\'');
        assert_eq!(statements(&["SELECT \"a"]).1, '"');
        assert_eq!(statements(&["SELECT $x$"]).1, '$');
        assert_eq!(statements(&["SELECT /* a"]).1, '*');
        assert_eq!(statements(&["-- only a comment", "  "]).1, '=');
        assert_eq!(statements(&["SELECT 1; -- done"]).1, '=');
    }

    #[test]
    fn tables_align_like_psql() {
        let table = Table {
            title: Some("Accounts".into()),
            headers: vec!["id".into(), "owner".into()],
            right: vec![true, false],
            rows: vec![
                vec!["1".into(), "alice".into()],
                vec!["10".into(), "".into()],
            ],
        };
        assert_eq!(
            table.render_with_count(),
            "  Accounts\n id | owner\n----+-------\n  1 | alice\n 10 |\n(2 rows)\n\n"
        );
    }
}
