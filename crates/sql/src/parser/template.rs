//! Templates of simple-protocol statements: the text of one SELECT, INSERT, UPDATE or DELETE with
//! its value literals replaced by parameters (`$1`, `$2`...), and those literals, found by a scan
//! of the text much cheaper than tokenising it. A session keeps a plan per template
//! (`session::template`), so a client that sends the same statement with other values — pgbench,
//! an ORM without server-side prepared statements — skips parsing and planning after the first,
//! as SQL Server's simple parameterization does.
//!
//! Invariant: the template, parsed and bound with each literal's own type declared for its
//! parameter (a number's type from its digits, a string unknown), means what the statement means.
//! So only literals whose value cannot change the plan or the parse are replaced:
//! - a number or string right after `=`, a number right after `+ - * /`, or either at the top
//!   level of a row of `INSERT ... VALUES`; never one after `<`, `>` or BETWEEN (a range's bounds
//!   feed the planner's estimates), in ORDER BY / GROUP BY / LIMIT, in a select list, or in a
//!   function's arguments;
//! - a unary minus is taken into its number (as the binder folds `-5`) only when it is certainly
//!   unary (after an operator, `(` or `,`) and nothing binding tighter follows the number;
//! - not a literal followed by `::` or `[`, nor a typed string (`DATE '...'`, `E'...'`).
//!
//! Anything this scan does not fully understand — comments, `$` (parameters, dollar quotes),
//! prefixed strings, backslashes in strings, numbers glued to letters, adjacent strings, several
//! statements — gives no template, and the statement takes the ordinary path.

/// A statement's template and the literals taken out of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    /// The statement's text with `$n` in place of the n-th literal.
    pub text: String,
    pub literals: Vec<Literal>,
}

/// A literal taken out of a statement, in the form the binder reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// A number's text, with its sign when a unary minus was folded in.
    Number(String),
    /// A string's contents (`''` read as `'`).
    Text(String),
}

/// The most literals one template takes out (a larger statement is rarely sent twice).
const MAX_LITERALS: usize = 1_000;

/// The template of `sql`, if it is one SELECT, INSERT, UPDATE or DELETE this scan understands.
pub fn template(sql: &str) -> Option<Template> {
    let mut scan = Scan::new(sql);
    scan.run()?;
    (scan.literals.len() <= MAX_LITERALS).then_some(Template {
        text: scan.out,
        literals: scan.literals,
    })
}

/// A significant token before the current position, as far as the context rules need it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Prev {
    Start,
    /// An unquoted word: whether it is VALUES.
    Word {
        values: bool,
    },
    /// A quoted identifier.
    Quoted,
    /// A run of operator characters: where it starts and ends in the text.
    Op {
        start: usize,
        end: usize,
    },
    /// A number or string literal (kept or replaced).
    Literal,
    Punct(u8),
}

struct Scan<'a> {
    sql: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// The template so far: the text up to `copied`, its literals replaced.
    out: String,
    copied: usize,
    literals: Vec<Literal>,
    /// The last significant token and the one before it.
    prev: Prev,
    before_prev: Prev,
    /// The statement's first word, lowercased.
    kind: Option<&'static str>,
    /// Per open parenthesis: whether it opens a row of INSERT's VALUES.
    parens: Vec<bool>,
    /// Whether the last token closed a VALUES row (a `,` and `(` may open the next).
    after_row: bool,
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

fn is_op_byte(b: u8) -> bool {
    matches!(
        b,
        b'+' | b'-'
            | b'*'
            | b'/'
            | b'<'
            | b'>'
            | b'='
            | b'~'
            | b'!'
            | b'@'
            | b'#'
            | b'%'
            | b'^'
            | b'&'
            | b'|'
            | b'`'
            | b'?'
            | b':'
    )
}

impl<'a> Scan<'a> {
    fn new(sql: &'a str) -> Self {
        Scan {
            sql,
            bytes: sql.as_bytes(),
            pos: 0,
            out: String::with_capacity(sql.len() + 8),
            copied: 0,
            literals: Vec::new(),
            prev: Prev::Start,
            before_prev: Prev::Start,
            kind: None,
            parens: Vec::new(),
            after_row: false,
        }
    }

    /// Scans the whole text; `None` when it is not a statement this scan understands.
    fn run(&mut self) -> Option<()> {
        while let Some(&b) = self.bytes.get(self.pos) {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => self.pos = self.skip_blank(self.pos),
                b'\'' => self.string()?,
                b'"' => self.quoted_identifier()?,
                b'0'..=b'9' => self.number()?,
                b'.' if self.bytes.get(self.pos + 1).is_some_and(u8::is_ascii_digit) => {
                    return None
                }
                b';' => return self.end(),
                b'$' => return None,
                b if is_ident_byte(b) => self.word()?,
                b if is_op_byte(b) => self.operator()?,
                b'(' | b')' | b',' | b'[' | b']' | b'.' => self.punct(b),
                _ => return None,
            }
        }
        self.finish(self.sql.len())
    }

    /// Copies the rest of the statement, up to `end`, to the template.
    fn finish(&mut self, end: usize) -> Option<()> {
        self.kind?;
        self.out.push_str(&self.sql[self.copied..end]);
        Some(())
    }

    /// Moves past a token that stays in the template, ending at `end`.
    fn keep(&mut self, end: usize, prev: Prev) {
        self.pos = end;
        self.after_row = false;
        self.token(prev);
    }

    /// Replaces the text from `start` to `end` by the next parameter, for `literal`.
    fn replace(&mut self, start: usize, end: usize, literal: Literal) {
        use std::fmt::Write;
        self.out.push_str(&self.sql[self.copied..start]);
        self.literals.push(literal);
        let _ = write!(self.out, "${}", self.literals.len());
        self.copied = end;
        self.keep(end, Prev::Literal);
    }

    fn token(&mut self, prev: Prev) {
        self.before_prev = std::mem::replace(&mut self.prev, prev);
    }

    /// A `;` ends the statement: only whitespace may follow.
    fn end(&mut self) -> Option<()> {
        let rest = &self.sql[self.pos + 1..];
        if !rest.trim().is_empty() {
            return None;
        }
        self.finish(self.pos)
    }

    fn word(&mut self) -> Option<()> {
        let end = self.scan_while(self.pos, is_ident_byte);
        if self.bytes.get(end) == Some(&b'\'') || self.bytes.get(end) == Some(&b'&') {
            return None; // E'...', B'...', X'...', N'...', U&'...'
        }
        let word = &self.sql[self.pos..end];
        if self.kind.is_none() {
            let kind = ["select", "insert", "update", "delete"]
                .into_iter()
                .find(|k| word.eq_ignore_ascii_case(k))?;
            self.kind = Some(kind);
        }
        let values = word.eq_ignore_ascii_case("values");
        self.keep(end, Prev::Word { values });
        Some(())
    }

    fn quoted_identifier(&mut self) -> Option<()> {
        let end = self.quoted_end(b'"')?;
        self.keep(end, Prev::Quoted);
        Some(())
    }

    fn operator(&mut self) -> Option<()> {
        let (start, end) = (self.pos, self.scan_while(self.pos, is_op_byte));
        let text = &self.sql[start..end];
        if text.contains("--") || text.contains("/*") {
            return None;
        }
        self.keep(end, Prev::Op { start, end });
        Some(())
    }

    fn punct(&mut self, b: u8) {
        let opens_row = b == b'('
            && self.kind == Some("insert")
            && (self.prev == Prev::Word { values: true }
                || (self.prev == Prev::Punct(b',') && self.after_row));
        let closes_row = b == b')' && self.parens.last() == Some(&true);
        match b {
            b'(' => self.parens.push(opens_row),
            b')' => {
                self.parens.pop();
            }
            _ => {}
        }
        let after_row = closes_row || (b == b',' && self.after_row);
        self.keep(self.pos + 1, Prev::Punct(b));
        self.after_row = after_row;
    }

    /// Whether the innermost open parenthesis is a VALUES row and the token before is its `(`
    /// or one of its commas.
    fn in_row_after(&self, prev: &Prev) -> bool {
        self.parens.last() == Some(&true) && matches!(prev, Prev::Punct(b'(' | b','))
    }

    fn string(&mut self) -> Option<()> {
        let start = self.pos;
        let end = self.quoted_end(b'\'')?;
        let body = &self.sql[start + 1..end - 1];
        if body.contains('\\') {
            return None;
        }
        let next = self.next_significant(end);
        if next == Some(b'\'') {
            return None; // adjacent strings are one literal
        }
        let replace = !self.followed_by_cast_or_subscript(end)
            && (self.prev_op() == Some("=") || self.in_row_after(&self.prev));
        if replace {
            self.replace(start, end, Literal::Text(body.replace("''", "'")));
        } else {
            self.keep(end, Prev::Literal);
        }
        Some(())
    }

    fn number(&mut self) -> Option<()> {
        let start = self.pos;
        let mut end = self.scan_while(start, |b| b.is_ascii_digit());
        if self.bytes.get(end) == Some(&b'.') {
            end = self.scan_while(end + 1, |b| b.is_ascii_digit());
        }
        if matches!(self.bytes.get(end), Some(b'e' | b'E')) {
            let mut digits = end + 1;
            if matches!(self.bytes.get(digits), Some(b'+' | b'-')) {
                digits += 1;
            }
            let exponent_end = self.scan_while(digits, |b| b.is_ascii_digit());
            if exponent_end == digits {
                return None;
            }
            end = exponent_end;
        }
        if self
            .bytes
            .get(end)
            .is_some_and(|&b| is_ident_byte(b) || b == b'.')
        {
            return None;
        }
        let digits = &self.sql[start..end];
        match self.number_context(end) {
            Some(Some(sign)) => self.replace(sign, end, Literal::Number(format!("-{digits}"))),
            Some(None) => self.replace(start, end, Literal::Number(digits.to_owned())),
            None => self.keep(end, Prev::Literal),
        }
        Some(())
    }

    /// Whether the number ending at `end` is replaced: `Some(None)` as it is, `Some(Some(at))`
    /// with the unary minus at text offset `at`, `None` if it stays in the text.
    fn number_context(&self, end: usize) -> Option<Option<usize>> {
        if self.followed_by_cast_or_subscript(end) {
            return None;
        }
        let Prev::Op { start, end: op_end } = self.prev else {
            return self.in_row_after(&self.prev).then_some(None);
        };
        let text = &self.sql[start..op_end];
        let (operator, sign_at) = match text.strip_suffix('-') {
            Some(rest) if !rest.is_empty() => (Some(rest), Some(op_end - 1)),
            Some(_) => match self.before_prev {
                Prev::Op { start: s, end: e } => (Some(&self.sql[s..e]), Some(start)),
                Prev::Punct(b'(' | b',') => (None, Some(start)),
                Prev::Punct(b')') | Prev::Literal | Prev::Quoted => (Some("-"), None),
                _ => return None,
            },
            None => (Some(text), None),
        };
        let context = match operator {
            Some(op) => matches!(op, "=" | "+" | "-" | "*" | "/"),
            None => self.in_row_after(&self.before_prev),
        };
        if !context || (sign_at.is_some() && !self.ends_operand(end)) {
            return None;
        }
        Some(sign_at)
    }

    /// Whether nothing that binds tighter than a unary minus follows position `end`.
    fn ends_operand(&self, end: usize) -> bool {
        match self.next_significant(end) {
            None => true,
            Some(b) => matches!(b, b',' | b')' | b';') || b.is_ascii_alphabetic(),
        }
    }

    fn followed_by_cast_or_subscript(&self, end: usize) -> bool {
        let at = self.skip_blank(end);
        self.bytes.get(at) == Some(&b'[') || self.sql[at..].starts_with("::")
    }

    /// The operator right before the current token, if the token before is one.
    fn prev_op(&self) -> Option<&str> {
        match self.prev {
            Prev::Op { start, end } => Some(&self.sql[start..end]),
            _ => None,
        }
    }

    fn scan_while(&self, from: usize, keep: impl Fn(u8) -> bool) -> usize {
        let mut at = from;
        while self.bytes.get(at).is_some_and(|&b| keep(b)) {
            at += 1;
        }
        at
    }

    fn skip_blank(&self, from: usize) -> usize {
        self.scan_while(from, |b| b.is_ascii_whitespace())
    }

    fn next_significant(&self, from: usize) -> Option<u8> {
        self.bytes.get(self.skip_blank(from)).copied()
    }

    /// The end (past the closing quote) of the quoted text at `pos`, a doubled quote inside.
    fn quoted_end(&self, quote: u8) -> Option<usize> {
        let mut at = self.pos + 1;
        loop {
            match *self.bytes.get(at)? {
                b if b == quote && self.bytes.get(at + 1) == Some(&quote) => at += 2,
                b if b == quote => return Some(at + 1),
                _ => at += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(sql: &str) -> Option<String> {
        template(sql).map(|t| t.text)
    }

    fn numbers(sql: &str) -> Vec<String> {
        template(sql)
            .unwrap()
            .literals
            .into_iter()
            .map(|l| match l {
                Literal::Number(n) => n,
                Literal::Text(s) => format!("'{s}'"),
            })
            .collect()
    }

    #[test]
    fn pgbench_statements_become_templates() {
        let update = "UPDATE pgbench_accounts SET abalance = abalance + -3241 WHERE aid = 81234;";
        assert_eq!(
            text(update).unwrap(),
            "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
        );
        assert_eq!(numbers(update), ["-3241", "81234"]);
        let insert = "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (7, 1, 81234, -3241, CURRENT_TIMESTAMP);";
        assert_eq!(
            text(insert).unwrap(),
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"
        );
        assert_eq!(numbers(insert), ["7", "1", "81234", "-3241"]);
        assert_eq!(
            text("SELECT abalance FROM pgbench_accounts WHERE aid = 5;").unwrap(),
            "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
        );
    }

    #[test]
    fn literals_that_shape_the_plan_or_the_parse_stay() {
        for sql in [
            "SELECT 1",
            "SELECT a FROM t ORDER BY 1 LIMIT 10 OFFSET 2",
            "SELECT a FROM t GROUP BY 1",
            "SELECT a FROM t WHERE a < 5 AND b >= 6 AND c BETWEEN 1 AND 2",
            "SELECT a FROM t WHERE a <= -5",
            "SELECT date_trunc('day', a) FROM t",
            "SELECT a FROM t WHERE a = DATE '2020-01-01'",
            "SELECT a FROM t WHERE a = '1'::int",
            "SELECT a FROM t WHERE a = -5 * 2",
            "SELECT a FROM t WHERE a = - 5 ^ 2",
            "SELECT a FROM t WHERE a IN (1, 2)",
            "SELECT * FROM (VALUES (1, 'a')) v",
            "UPDATE t SET a = CASE WHEN b THEN -5 END",
        ] {
            let t = template(sql).unwrap();
            assert!(
                t.literals.is_empty() || sql.contains("* 2") || sql.contains("^ 2"),
                "{sql}: {t:?}"
            );
        }
        assert_eq!(numbers("SELECT a FROM t WHERE a = -5 * 2"), ["2"]);
        assert_eq!(
            text("SELECT a FROM t WHERE a = -5 * 2").unwrap(),
            "SELECT a FROM t WHERE a = -5 * $1"
        );
    }

    #[test]
    fn signs_strings_and_rows() {
        // After a word, a minus may be unary (`THEN -5`) or binary (`b - 5`): left alone.
        assert!(numbers("UPDATE t SET a = b - 5").is_empty());
        assert_eq!(numbers("UPDATE t SET a = (b) - 5"), ["5"]);
        assert_eq!(
            text("UPDATE t SET a = (b) - 5").unwrap(),
            "UPDATE t SET a = (b) - $1"
        );
        assert_eq!(numbers("UPDATE t SET a = (b) - -5"), ["-5"]);
        assert_eq!(numbers("DELETE FROM t WHERE a =-7"), ["-7"]);
        assert_eq!(
            text("DELETE FROM t WHERE a =-7").unwrap(),
            "DELETE FROM t WHERE a =$1"
        );
        assert_eq!(numbers("DELETE FROM t WHERE a = 1.5e3"), ["1.5e3"]);
        assert_eq!(
            numbers("INSERT INTO t VALUES (1, 'it''s', -2, (3)), (4, 'b', lower('C'), 5)"),
            ["1", "'it's'", "-2", "4", "'b'", "5"]
        );
        assert_eq!(
            text("insert into t values (1, 'x')").unwrap(),
            "insert into t values ($1, $2)"
        );
        assert_eq!(numbers("select * from t where \"a=\" = 'x'"), ["'x'"]);
    }

    #[test]
    fn what_the_scan_does_not_understand_has_no_template() {
        for sql in [
            "SELECT 1; SELECT 2",
            "SELECT a FROM t WHERE a = $1",
            "SELECT a FROM t WHERE a = 5 -- comment",
            "SELECT a /* c */ FROM t",
            "SELECT a FROM t WHERE a = E'x'",
            "SELECT a FROM t WHERE a = 'a\\b'",
            "SELECT a FROM t WHERE a = 'a' 'b'",
            "SELECT a FROM t WHERE a = 1abc",
            "SELECT a FROM t WHERE a = .5",
            "SELECT a FROM t WHERE a = 'unterminated",
            "BEGIN",
            "WITH x AS (SELECT 1) SELECT * FROM x",
            "",
        ] {
            assert_eq!(template(sql), None, "{sql}");
        }
        assert!(template("SELECT 1;  \n").is_some());
    }
}
