//! The COPY statement, read by the server itself: sqlparser cannot parse PostgreSQL's option list
//! (`WITH (FREEZE ON)`, which pgbench sends), and the data of a COPY travels in the protocol,
//! not in SQL, so COPY never reaches the session as text.
//!
//! Accepted forms (PostgreSQL 15's grammar, STDIN / STDOUT only):
//!
//! ```text
//! COPY name [ ( column [, ...] ) ] FROM STDIN [ [ WITH ] ( option [, ...] ) | legacy options ]
//! COPY { name [ ( column [, ...] ) ] | ( query ) } TO STDOUT [ same options ]
//!
//! option: FORMAT { text | csv } | DELIMITER 'c' | NULL 'string' | HEADER [ boolean | MATCH ]
//!       | QUOTE 'c' | ESCAPE 'c' | FORCE_QUOTE { ( column [, ...] ) | * } | FREEZE [ boolean ]
//!       | ENCODING 'UTF8'
//! legacy: BINARY | CSV | HEADER | FREEZE | DELIMITER [AS] 'c' | NULL [AS] 'string'
//!       | QUOTE [AS] 'c' | ESCAPE [AS] 'c' | FORCE QUOTE { column [, ...] | * }
//! ```
//!
//! FREEZE is accepted and has no effect. Binary format, files and programs are refused (0A000).
//!
//! The same reader tells a blank query (comments only) from a statement, for Parse.

use steady_sql::SqlError;

use super::format::{CopyFormat, CopyOptions, ForceQuote};

/// A parsed COPY statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyCommand {
    pub source: CopySource,
    pub direction: Direction,
    pub options: CopyOptions,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopySource {
    /// A table (schema-qualified or not) and an optional column list.
    Table {
        name: Vec<String>,
        columns: Vec<String>,
    },
    /// `COPY (query) TO STDOUT`: the query's text.
    Query(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    FromStdin,
    ToStdout,
}

/// Reads `sql` as a COPY statement; `None` if it is not one.
pub fn parse(sql: &str) -> Option<Result<CopyCommand, SqlError>> {
    let mut p = Parser::new(sql);
    p.keyword("copy").then(|| p.command())
}

/// Whether `sql` holds no statement at all — only white space, comments and semicolons (an empty
/// query, which a Parse must not hand to the session).
pub fn is_blank(sql: &str) -> bool {
    let mut p = Parser::new(sql);
    while p.punct(';') {}
    p.rest().is_empty()
}

/// A cursor over the statement text.
struct Parser<'a> {
    sql: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn new(sql: &'a str) -> Self {
        Parser { sql, pos: 0 }
    }

    fn command(&mut self) -> Result<CopyCommand, SqlError> {
        let source = self.source()?;
        let direction = self.direction()?;
        if matches!(source, CopySource::Query(_)) && direction == Direction::FromStdin {
            return Err(SqlError::syntax("COPY (query) FROM is not allowed"));
        }
        let mut options = CopyOptions::default();
        self.keyword("with");
        if self.punct('(') {
            self.option_list(&mut options)?;
        } else {
            self.legacy_options(&mut options)?;
        }
        self.punct(';');
        self.skip_space();
        if self.pos < self.sql.len() {
            return Err(self.unexpected());
        }
        options.finish()?;
        Ok(CopyCommand {
            source,
            direction,
            options,
        })
    }

    fn source(&mut self) -> Result<CopySource, SqlError> {
        if self.punct('(') {
            return Ok(CopySource::Query(self.parenthesized()?));
        }
        let mut name = vec![self.ident()?];
        while self.punct('.') {
            name.push(self.ident()?);
        }
        let columns = if self.punct('(') {
            self.ident_list()?
        } else {
            Vec::new()
        };
        Ok(CopySource::Table { name, columns })
    }

    fn direction(&mut self) -> Result<Direction, SqlError> {
        let direction = if self.keyword("from") {
            Direction::FromStdin
        } else if self.keyword("to") {
            Direction::ToStdout
        } else {
            return Err(self.unexpected());
        };
        let endpoint = match direction {
            Direction::FromStdin => "stdin",
            Direction::ToStdout => "stdout",
        };
        if self.keyword(endpoint) {
            return Ok(direction);
        }
        Err(SqlError::unsupported(
            "COPY with a file or program (use STDIN/STDOUT, e.g. psql's \\copy)",
        ))
    }

    /// `( option [, ...] )` after the opening parenthesis.
    fn option_list(&mut self, options: &mut CopyOptions) -> Result<(), SqlError> {
        loop {
            let name = self.ident()?;
            self.option(&name, options)?;
            if self.punct(')') {
                return Ok(());
            }
            if !self.punct(',') {
                return Err(self.unexpected());
            }
        }
    }

    fn option(&mut self, name: &str, options: &mut CopyOptions) -> Result<(), SqlError> {
        match name {
            "format" => options.format = format_name(&self.word()?)?,
            "freeze" => {
                self.optional_bool()?;
            }
            "header" => options.header = self.optional_bool()?,
            "delimiter" => options.delimiter = Some(self.string()?),
            "null" => options.null = Some(self.string()?),
            "quote" => options.quote = Some(self.string()?),
            "escape" => options.escape = Some(self.string()?),
            "encoding" => check_encoding(&self.string()?)?,
            "force_quote" => options.force_quote = self.force_quote()?,
            other => {
                return Err(SqlError::unsupported(format!("COPY option \"{other}\"")));
            }
        }
        Ok(())
    }

    /// The pre-9.0 option syntax (`WITH CSV HEADER DELIMITER ','`).
    fn legacy_options(&mut self, options: &mut CopyOptions) -> Result<(), SqlError> {
        loop {
            if self.keyword("binary") {
                options.format = format_name("binary")?;
            } else if self.keyword("csv") {
                options.format = CopyFormat::Csv;
            } else if self.keyword("header") {
                options.header = true;
            } else if self.keyword("freeze") {
            } else if self.keyword("force") {
                if !self.keyword("quote") {
                    return Err(SqlError::unsupported("COPY FORCE NOT NULL"));
                }
                options.force_quote = self.force_quote()?;
            } else if let Some(name) = ["delimiter", "null", "quote", "escape", "encoding"]
                .into_iter()
                .find(|k| self.keyword(k))
            {
                self.keyword("as");
                self.option(name, options)?;
            } else {
                return Ok(());
            }
        }
    }

    fn force_quote(&mut self) -> Result<ForceQuote, SqlError> {
        if self.punct('*') {
            return Ok(ForceQuote::All);
        }
        let columns = if self.punct('(') {
            self.ident_list()?
        } else {
            let mut columns = vec![self.ident()?];
            while self.punct(',') {
                columns.push(self.ident()?);
            }
            columns
        };
        Ok(ForceQuote::Columns(columns))
    }

    /// An optional boolean (`on`, `off`, `true`, `false`, `1`, `0`, `match`), true if absent.
    fn optional_bool(&mut self) -> Result<bool, SqlError> {
        self.skip_space();
        let rest = &self.sql[self.pos..];
        if rest.starts_with([',', ')']) || rest.is_empty() {
            return Ok(true);
        }
        match self.word()?.as_str() {
            "on" | "true" | "1" | "match" => Ok(true),
            "off" | "false" | "0" => Ok(false),
            other => Err(SqlError::syntax(format!(
                "COPY option requires a Boolean value, not \"{other}\""
            ))),
        }
    }

    /// `column [, ...] )` after the opening parenthesis.
    fn ident_list(&mut self) -> Result<Vec<String>, SqlError> {
        let mut names = vec![self.ident()?];
        while self.punct(',') {
            names.push(self.ident()?);
        }
        if !self.punct(')') {
            return Err(self.unexpected());
        }
        Ok(names)
    }

    /// The text up to the parenthesis closing one just read, quotes respected.
    fn parenthesized(&mut self) -> Result<String, SqlError> {
        let start = self.pos;
        let mut depth = 1;
        let mut quote = None;
        for (i, c) in self.sql[start..].char_indices() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '(') => depth += 1,
                (None, ')') => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos = start + i + 1;
                        return Ok(self.sql[start..start + i].to_owned());
                    }
                }
                _ => {}
            }
        }
        Err(SqlError::syntax("unterminated parenthesis in COPY"))
    }

    /// An identifier: unquoted (folded to lower case) or double-quoted.
    fn ident(&mut self) -> Result<String, SqlError> {
        self.skip_space();
        if self.rest().starts_with('"') {
            return self.quoted('"');
        }
        self.word()
    }

    /// An unquoted word (letters, digits, `_`, `$`), lower-cased.
    fn word(&mut self) -> Result<String, SqlError> {
        self.skip_space();
        let len = self
            .rest()
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(self.rest().len());
        if len == 0 {
            return Err(self.unexpected());
        }
        let word = self.rest()[..len].to_lowercase();
        self.pos += len;
        Ok(word)
    }

    /// A string literal: `'…'` (with `''`) or `E'…'` (with backslash escapes).
    fn string(&mut self) -> Result<String, SqlError> {
        self.skip_space();
        let rest = self.rest();
        if rest.starts_with(['E', 'e']) && rest[1..].starts_with('\'') {
            self.pos += 1;
            return Ok(unescape(&self.quoted('\'')?));
        }
        if !rest.starts_with('\'') {
            return Err(self.unexpected());
        }
        self.quoted('\'')
    }

    /// The body of a literal opened by `quote`, a doubled quote standing for itself.
    fn quoted(&mut self, quote: char) -> Result<String, SqlError> {
        let mut out = String::new();
        let mut chars = self.rest()[1..].char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c != quote {
                out.push(c);
            } else if chars.peek().is_some_and(|(_, n)| *n == quote) {
                out.push(quote);
                chars.next();
            } else {
                self.pos += i + 2;
                return Ok(out);
            }
        }
        Err(SqlError::syntax("unterminated quoted string in COPY"))
    }

    /// Consumes `keyword` (a whole word, any case) if it comes next.
    fn keyword(&mut self, keyword: &str) -> bool {
        self.skip_space();
        let rest = self.rest();
        // Compared as bytes: the keyword is ASCII, so a match ends on a character boundary,
        // while the text may hold a multi-byte character across the keyword's length.
        let matches = rest
            .as_bytes()
            .get(..keyword.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(keyword.as_bytes()))
            && !rest[keyword.len()..]
                .starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$');
        if matches {
            self.pos += keyword.len();
        }
        matches
    }

    fn punct(&mut self, c: char) -> bool {
        self.skip_space();
        let found = self.rest().starts_with(c);
        if found {
            self.pos += c.len_utf8();
        }
        found
    }

    /// Skips white space and comments.
    fn skip_space(&mut self) {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            if trimmed.starts_with("--") {
                self.pos += trimmed.find('\n').unwrap_or(trimmed.len());
            } else if trimmed.starts_with("/*") {
                self.pos += trimmed.find("*/").map_or(trimmed.len(), |end| end + 2);
            } else {
                return;
            }
        }
    }

    fn rest(&self) -> &'a str {
        &self.sql[self.pos..]
    }

    fn unexpected(&self) -> SqlError {
        let near: String = self.rest().chars().take(20).collect();
        if near.is_empty() {
            SqlError::syntax("syntax error at end of input")
        } else {
            SqlError::syntax(format!("syntax error at or near \"{near}\""))
        }
    }
}

fn format_name(name: &str) -> Result<CopyFormat, SqlError> {
    match name {
        "text" => Ok(CopyFormat::Text),
        "csv" => Ok(CopyFormat::Csv),
        "binary" => Err(SqlError::unsupported("COPY in binary format")),
        other => Err(SqlError::new(
            "22023",
            format!("COPY format \"{other}\" not recognized"),
        )),
    }
}

fn check_encoding(name: &str) -> Result<(), SqlError> {
    match name.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
        "utf8" | "unicode" => Ok(()),
        _ => Err(SqlError::unsupported(format!("COPY encoding \"{name}\""))),
    }
}

/// The backslash escapes of an `E'…'` literal.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(sql: &str) -> CopyCommand {
        parse(sql).expect("a COPY").expect("valid")
    }

    #[test]
    fn pgbench_freeze_on() {
        let command = copy("copy pgbench_accounts from stdin with (freeze on)");
        assert_eq!(
            command.source,
            CopySource::Table {
                name: vec!["pgbench_accounts".into()],
                columns: vec![]
            }
        );
        assert_eq!(command.direction, Direction::FromStdin);
        assert_eq!(command.options, CopyOptions::default());
    }

    #[test]
    fn columns_options_and_quoting() {
        let command = copy(
            "COPY public.\"My T\" (a, \"B\") FROM STDIN WITH (FORMAT csv, HEADER, DELIMITER ';', NULL 'x');",
        );
        assert_eq!(
            command.source,
            CopySource::Table {
                name: vec!["public".into(), "My T".into()],
                columns: vec!["a".into(), "B".into()]
            }
        );
        assert_eq!(command.options.format, CopyFormat::Csv);
        assert!(command.options.header);
        assert_eq!(command.options.delimiter.as_deref(), Some(";"));
        assert_eq!(command.options.null.as_deref(), Some("x"));
    }

    #[test]
    fn legacy_options_and_queries() {
        let command = copy("copy (select 1, ')') to stdout with csv header delimiter as E'\\t'");
        assert_eq!(command.source, CopySource::Query("select 1, ')'".into()));
        assert_eq!(command.direction, Direction::ToStdout);
        assert_eq!(command.options.format, CopyFormat::Csv);
        assert_eq!(command.options.delimiter.as_deref(), Some("\t"));
    }

    #[test]
    fn blank_statements() {
        assert!(is_blank(" ; -- only a comment\n /* and another */ ;"));
        assert!(!is_blank("-- comment\nselect 1"));
        assert!(!is_blank("'--'"));
    }

    #[test]
    fn refusals() {
        assert!(parse("select 1").is_none());
        assert!(parse("copyright").is_none());
        let err = |sql| parse(sql).unwrap().unwrap_err().code;
        assert_eq!(err("copy t from '/etc/passwd'"), "0A000");
        assert_eq!(err("copy t from stdin (format binary)"), "0A000");
        assert_eq!(err("copy t from stdin; select 1"), "42601");
        assert_eq!(err("copy (select 1) from stdin"), "42601");
    }

    /// Found by the `wire` fuzz target: a multi-byte character across a keyword's length
    /// panicked (a string sliced inside a character); each is refused.
    #[test]
    fn multi_byte_text_where_a_keyword_may_come_is_an_error() {
        for sql in [
            "copy t fr\u{fffd}m stdin",
            "copy t from st\u{e9}\u{e9}",
            "copy t from stdin w\u{e9}th (format csv)",
            "copy t from stdin with (format csv, delimiter '\u{e9}')",
        ] {
            assert!(parse(sql).unwrap().is_err(), "{sql}");
        }
        assert!(parse("c\u{fffd}py t from stdin").is_none());
    }
}
