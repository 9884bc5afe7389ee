//! SQL text to statements: splits a query string at top-level semicolons, parses each statement
//! with sqlparser's PostgreSQL dialect, and handles the statements sqlparser cannot parse in the
//! forms clients send (`VACUUM ANALYZE t`, `VACUUM (ANALYZE) t`, `ANALYZE t`, `CHECKPOINT`) with a
//! small parser of their own over the same tokens.

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::error::{Result, SqlError};

pub mod template;

/// A parsed statement.
#[derive(Debug, Clone)]
pub enum Statement {
    Sql(Box<ast::Statement>),
    /// `VACUUM [FULL] [ANALYZE] [tables]`.
    Vacuum {
        full: bool,
        analyze: bool,
        tables: Vec<String>,
    },
    /// `ANALYZE [tables]`.
    Analyze {
        tables: Vec<String>,
    },
    /// `CHECKPOINT`.
    Checkpoint,
    /// Nothing but whitespace and comments (a prepared empty query).
    Empty,
}

/// Parses every statement of `sql` (empty statements are skipped).
pub fn parse(sql: &str) -> Result<Vec<Statement>> {
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|e| SqlError::syntax(e.to_string()))?;
    split(tokens)
        .into_iter()
        .map(|statement| parse_one(&dialect, statement))
        .collect()
}

/// Splits tokens at top-level semicolons, dropping statements with nothing but whitespace.
fn split(tokens: Vec<TokenWithSpan>) -> Vec<Vec<TokenWithSpan>> {
    let mut statements = Vec::new();
    let mut current = Vec::new();
    for token in tokens {
        if token.token == Token::SemiColon {
            statements.push(std::mem::take(&mut current));
        } else {
            current.push(token);
        }
    }
    statements.push(current);
    statements
        .into_iter()
        .filter(|s| s.iter().any(|t| !is_blank(&t.token)))
        .collect()
}

fn is_blank(token: &Token) -> bool {
    matches!(token, Token::Whitespace(_) | Token::EOF)
}

fn parse_one(dialect: &PostgreSqlDialect, tokens: Vec<TokenWithSpan>) -> Result<Statement> {
    let words: Vec<&Token> = tokens
        .iter()
        .map(|t| &t.token)
        .filter(|t| !is_blank(t))
        .collect();
    match words.first() {
        Some(Token::Word(w)) if w.keyword == Keyword::VACUUM => return parse_vacuum(&words[1..]),
        Some(token) if word(token).as_deref() == Some("checkpoint") => {
            return match words.get(1) {
                None => Ok(Statement::Checkpoint),
                Some(extra) => Err(SqlError::syntax(format!(
                    "syntax error at or near \"{extra}\""
                ))),
            };
        }
        Some(Token::Word(w)) if w.keyword == Keyword::ANALYZE => {
            return Ok(Statement::Analyze {
                tables: table_list(&words[1..], &["verbose"])?,
            })
        }
        _ => {}
    }
    let mut parser = Parser::new(dialect).with_tokens_with_locations(tokens);
    let statement = parser.parse_statement()?;
    if parser.peek_token().token != Token::EOF {
        return Err(SqlError::syntax(format!(
            "syntax error at or near \"{}\"",
            parser.peek_token().token
        )));
    }
    Ok(Statement::Sql(Box::new(statement)))
}

fn word(token: &Token) -> Option<String> {
    match token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_lowercase()),
        Token::Word(w) => Some(w.value.clone()),
        _ => None,
    }
}

fn parse_vacuum(rest: &[&Token]) -> Result<Statement> {
    let mut full = false;
    let mut analyze = false;
    let mut i = 0;
    if rest.first() == Some(&&Token::LParen) {
        i = 1;
        while i < rest.len() && rest[i] != &Token::RParen {
            match word(rest[i]).as_deref() {
                Some("full") => full = true,
                Some("analyze") => analyze = true,
                _ => {}
            }
            i += 1;
        }
        i += 1;
    }
    while let Some(w) = rest.get(i).and_then(|t| word(t)) {
        match w.as_str() {
            "full" => full = true,
            "analyze" | "analyse" => analyze = true,
            "freeze" | "verbose" => {}
            _ => break,
        }
        i += 1;
    }
    let tables = table_list(rest.get(i..).unwrap_or_default(), &[])?;
    Ok(Statement::Vacuum {
        full,
        analyze,
        tables,
    })
}

/// `name [(columns)] [, ...]` (column lists are ignored), after any of `skip` words. A name
/// qualified by `public` is its last part; by another schema it stays `schema.name`, which names
/// no table (tables live in `public`), so the statement fails instead of taking `public.name`.
fn table_list(tokens: &[&Token], skip: &[&str]) -> Result<Vec<String>> {
    let syntax = |t: Option<&&Token>| {
        SqlError::syntax(format!(
            "syntax error at or near \"{}\"",
            t.map_or("end of input".to_owned(), |t| t.to_string())
        ))
    };
    let mut rest = tokens.iter().peekable();
    while rest
        .peek()
        .and_then(|t| word(t))
        .is_some_and(|w| skip.contains(&w.as_str()))
    {
        rest.next();
    }
    let mut tables = Vec::new();
    while let Some(first) = rest.next() {
        let mut name = word(first).ok_or_else(|| syntax(Some(first)))?;
        let mut schema = None;
        while rest.peek() == Some(&&&Token::Period) {
            rest.next();
            let part = rest.next();
            let part = part.and_then(|t| word(t)).ok_or_else(|| syntax(part))?;
            schema = Some(std::mem::replace(&mut name, part));
        }
        tables.push(match schema {
            Some(schema) if schema != "public" => format!("{schema}.{name}"),
            _ => name,
        });
        if rest.peek() == Some(&&&Token::LParen) {
            for token in rest.by_ref() {
                if token == &&Token::RParen {
                    break;
                }
            }
        }
        match rest.next() {
            None => break,
            Some(Token::Comma) => continue,
            other => return Err(syntax(other)),
        }
    }
    Ok(tables)
}

/// Parses one expression, such as a stored column default.
pub fn parse_expr(text: &str) -> Result<ast::Expr> {
    Ok(Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)?
        .parse_expr()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_statements_and_skips_empty_ones() {
        let statements = parse("select 1; ; select 'a;b';").unwrap();
        assert_eq!(statements.len(), 2);
    }

    #[test]
    fn vacuum_forms_clients_send() {
        for (sql, full, analyze, tables) in [
            ("VACUUM", false, false, vec![]),
            (
                "vacuum analyze pgbench_branches",
                false,
                true,
                vec!["pgbench_branches"],
            ),
            ("VACUUM (ANALYZE) t", false, true, vec!["t"]),
            ("VACUUM FULL public.t, u", true, false, vec!["t", "u"]),
        ] {
            let Statement::Vacuum {
                full: f,
                analyze: a,
                tables: t,
            } = &parse(sql).unwrap()[0]
            else {
                panic!("{sql} is not a VACUUM");
            };
            assert_eq!(
                (*f, *a, t.clone()),
                (
                    full,
                    analyze,
                    tables.iter().map(|s| s.to_string()).collect::<Vec<_>>()
                ),
                "{sql}"
            );
        }
    }

    #[test]
    fn garbage_is_a_syntax_error() {
        assert_eq!(parse("selec 1").unwrap_err().code, "42601");
        assert_eq!(parse("select 1 1").unwrap_err().code, "42601");
    }
}
