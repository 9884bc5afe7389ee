//! SQL text to statements: splits a query string at top-level semicolons, parses each statement
//! with sqlparser's PostgreSQL dialect, and handles the statements sqlparser cannot parse in the
//! forms clients send (`VACUUM ANALYZE t`, `VACUUM (ANALYZE) t`, `ANALYZE t`, `CHECKPOINT`) with a
//! small parser of their own over the same tokens.

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Whitespace};

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
    /// `ALTER SEQUENCE [IF EXISTS] name OWNED BY table.column | NONE` (names without their
    /// schema; sqlparser has no ALTER SEQUENCE).
    AlterSequenceOwnedBy {
        if_exists: bool,
        sequence: String,
        owner: Option<(String, String)>,
    },
    /// `ALTER TYPE name OWNER TO role` (sqlparser reads no OWNER TO for types; pg_dump writes
    /// it after each type).
    AlterTypeOwner {
        name: String,
        owner: String,
    },
    /// `INSERT ... OVERRIDING { SYSTEM | USER } VALUE ...` (sqlparser reads no OVERRIDING): the
    /// INSERT without it, and whether it was SYSTEM.
    InsertOverriding {
        insert: Box<ast::Statement>,
        system: bool,
    },
    /// `SET CONSTRAINTS {ALL | name, ...} {DEFERRED | IMMEDIATE}` (sqlparser reads no SET
    /// CONSTRAINTS): the names (None: ALL) and whether DEFERRED.
    SetConstraints {
        names: Option<Vec<String>>,
        deferred: bool,
    },
    /// `CREATE MATERIALIZED VIEW ... AS query [WITH [NO] DATA]` (sqlparser reads no WITH DATA
    /// there): the CREATE VIEW statement, and whether WITH DATA (the default).
    CreateMaterializedView {
        create: Box<ast::Statement>,
        with_data: bool,
    },
    /// `REFRESH MATERIALIZED VIEW [CONCURRENTLY] name [WITH [NO] DATA]` (sqlparser has no
    /// REFRESH).
    RefreshMaterializedView {
        name: String,
        concurrently: bool,
        with_data: bool,
    },
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
        Some(Token::Word(w))
            if w.keyword == Keyword::ALTER
                && words.get(1).and_then(|t| word(t)).as_deref() == Some("sequence") =>
        {
            return parse_alter_sequence(&words[2..]);
        }
        Some(Token::Word(w))
            if w.keyword == Keyword::ALTER
                && words.get(1).and_then(|t| word(t)).as_deref() == Some("type")
                && words.iter().any(|t| unquoted_keyword(t) == Keyword::OWNER) =>
        {
            return parse_alter_type_owner(&words[2..]);
        }
        Some(Token::Word(w))
            if w.keyword == Keyword::SET
                && words.get(1).and_then(|t| word(t)).as_deref() == Some("constraints") =>
        {
            return parse_set_constraints(&words[2..]);
        }
        Some(token) if word(token).as_deref() == Some("refresh") => {
            return parse_refresh(&words[1..]);
        }
        Some(Token::Word(w))
            if w.keyword == Keyword::CREATE
                && words.get(1).map(|t| unquoted_keyword(t)) == Some(Keyword::MATERIALIZED) =>
        {
            let (tokens, with_data) = without_with_data(tokens);
            let create = parse_general(dialect, tokens)?;
            let Statement::Sql(create) = create else {
                return Err(SqlError::syntax("CREATE MATERIALIZED VIEW ... AS query"));
            };
            return Ok(Statement::CreateMaterializedView {
                create,
                with_data: with_data.unwrap_or(true),
            });
        }
        Some(Token::Word(w))
            if w.keyword == Keyword::CREATE
                && words.last().and_then(|t| word(t)).as_deref() == Some("option") =>
        {
            if let (tokens, Some(check)) = without_check_option(tokens.clone()) {
                return with_check_option(parse_general(dialect, tokens)?, check);
            }
        }
        Some(Token::Word(w)) if w.keyword == Keyword::ANALYZE => {
            return Ok(Statement::Analyze {
                tables: table_list(&words[1..], &["verbose"])?,
            })
        }
        _ => {}
    }
    parse_general(dialect, tokens)
}

/// A statement sqlparser reads, once the forms it does not read are rewritten.
fn parse_general(dialect: &PostgreSqlDialect, tokens: Vec<TokenWithSpan>) -> Result<Statement> {
    let words: Vec<&Token> = tokens
        .iter()
        .map(|t| &t.token)
        .filter(|t| !is_blank(t))
        .collect();
    let create_user = is_create_user(&words);
    let create_sequence = is_create_sequence(&words);
    let overriding = overriding_clause(&words);
    let identity_sequence = identity_sequence(&words);
    let has_identity = words
        .iter()
        .any(|t| unquoted_keyword(t) == Keyword::IDENTITY);
    let tokens = fetch_in_parser_form(without_only(builtin_operators_unwrapped(tokens)));
    let tokens = on_conflict_where_marked(between_symmetric_marked(tokens));
    let tokens = match identity_sequence {
        Some(expected) => without_sequence_name(tokens, &expected)?,
        None => tokens,
    };
    let tokens = match overriding {
        Some(_) => without_overriding(tokens),
        None => tokens,
    };
    let tokens = if create_sequence {
        sequence_options_in_parser_order(tokens)
    } else if has_identity {
        identity_options_in_parser_order(tokens)
    } else if create_user {
        user_as_role(tokens)
    } else {
        tokens
    };
    let mut parser = Parser::new(dialect).with_tokens_with_locations(tokens);
    let mut statement = parser.parse_statement()?;
    row_constructors_as_tuples(&mut statement);
    if let (true, ast::Statement::CreateRole(create)) = (create_user, &mut statement) {
        create.login.get_or_insert(true);
    }
    if parser.peek_token().token != Token::EOF {
        return Err(SqlError::syntax(format!(
            "syntax error at or near \"{}\"",
            parser.peek_token().token
        )));
    }
    match overriding {
        Some(system) if matches!(statement, ast::Statement::Insert(_)) => {
            Ok(Statement::InsertOverriding {
                insert: Box::new(statement),
                system,
            })
        }
        _ => Ok(Statement::Sql(Box::new(statement))),
    }
}

/// `ROW(a, b)` is the row constructor `(a, b)`: the parser reads it as a call of a function
/// named row, rewritten here so that the binder meets one form of it.
fn row_constructors_as_tuples(statement: &mut ast::Statement) {
    let _ = ast::visit_expressions_mut(statement, |expr| {
        if let Some(items) = row_constructor_items(expr) {
            *expr = ast::Expr::Tuple(items);
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}

/// The items of `ROW(...)` given as a plain call (no FILTER, OVER or named arguments).
fn row_constructor_items(expr: &ast::Expr) -> Option<Vec<ast::Expr>> {
    let ast::Expr::Function(call) = expr else {
        return None;
    };
    let plain = call.over.is_none() && call.filter.is_none() && call.within_group.is_empty();
    let named_row =
        matches!(call.name.0.as_slice(), [part] if part.to_string().eq_ignore_ascii_case("row"));
    let ast::FunctionArguments::List(list) = &call.args else {
        return None;
    };
    if !plain || !named_row || list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
        return None;
    }
    list.args
        .iter()
        .map(|arg| match arg {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// For an INSERT with `OVERRIDING SYSTEM VALUE` (true) or `OVERRIDING USER VALUE` (false),
/// which one.
fn overriding_clause(words: &[&Token]) -> Option<bool> {
    if words.first().map(|t| unquoted_keyword(t)) != Some(Keyword::INSERT) {
        return None;
    }
    words.windows(3).find_map(|w| {
        if !is_overriding(w[0]) || unquoted_keyword(w[2]) != Keyword::VALUE {
            return None;
        }
        match unquoted_keyword(w[1]) {
            Keyword::SYSTEM => Some(true),
            Keyword::USER => Some(false),
            _ => None,
        }
    })
}

fn is_overriding(token: &Token) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("overriding"))
}

/// The tokens without the first `OVERRIDING ... VALUE` clause.
fn without_overriding(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let solid = solid_positions(&tokens);
    let Some(n) = solid.iter().position(|&i| is_overriding(&tokens[i].token)) else {
        return tokens;
    };
    let (from, to) = (solid[n], solid[(n + 2).min(solid.len() - 1)]);
    without_positions(tokens, |i| (from..=to).contains(&i))
}

/// The keyword a token is, unquoted (`NoKeyword` for anything else).
fn unquoted_keyword(token: &Token) -> Keyword {
    match token {
        Token::Word(w) if w.quote_style.is_none() => w.keyword,
        _ => Keyword::NoKeyword,
    }
}

/// What [`on_conflict_where_marked`] begins the name of the column it adds with; the rest of
/// the name is the predicate's text.
pub const CONFLICT_PREDICATE: &str = "ON CONFLICT WHERE ";

/// The tokens with `ON CONFLICT (columns) WHERE predicate DO ...` (the predicate that lets a
/// partial unique index be inferred, which sqlparser does not read) written `ON CONFLICT
/// (columns, "ON CONFLICT WHERE predicate") DO ...`: a quoted name no column has, which the
/// binder takes apart.
fn on_conflict_where_marked(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&i| !is_blank(&tokens[i].token))
        .collect();
    let at = |k: usize| significant.get(k).map(|&i| &tokens[i].token);
    let Some(conflict) =
        (0..significant.len()).find(|&k| at(k).map(unquoted_keyword) == Some(Keyword::CONFLICT))
    else {
        return tokens;
    };
    if at(conflict + 1) != Some(&Token::LParen) {
        return tokens;
    }
    let mut depth = 0usize;
    let mut close = None;
    for k in conflict + 1..significant.len() {
        match at(k) {
            Some(Token::LParen) => depth += 1,
            Some(Token::RParen) => {
                depth -= 1;
                if depth == 0 {
                    close = Some(k);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(close) = close else { return tokens };
    if at(close + 1).map(unquoted_keyword) != Some(Keyword::WHERE) {
        return tokens;
    }
    let mut depth = 0usize;
    let Some(action) = (close + 2..significant.len()).find(|&k| {
        match at(k) {
            Some(Token::LParen) => depth += 1,
            Some(Token::RParen) => depth = depth.saturating_sub(1),
            _ => {}
        }
        depth == 0 && at(k).map(unquoted_keyword) == Some(Keyword::DO)
    }) else {
        return tokens;
    };
    let (close, where_at, action) = (
        significant[close],
        significant[close + 1],
        significant[action],
    );
    let predicate: String = tokens[where_at + 1..action]
        .iter()
        .map(|t| t.token.to_string())
        .collect();
    let mut out = Vec::with_capacity(tokens.len());
    out.extend_from_slice(&tokens[..close]);
    out.push(TokenWithSpan::wrap(Token::Comma));
    out.push(TokenWithSpan::wrap(Token::Word(
        sqlparser::tokenizer::Word {
            value: format!("{CONFLICT_PREDICATE}{}", predicate.trim()),
            quote_style: Some('"'),
            keyword: Keyword::NoKeyword,
        },
    )));
    out.push(tokens[close].clone());
    out.push(TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space)));
    out.extend_from_slice(&tokens[action..]);
    out
}

/// The function name [`between_symmetric_marked`] wraps a symmetric BETWEEN's lower bound in (a
/// quoted name no function has).
pub const SYMMETRIC_BOUND: &str = "BETWEEN SYMMETRIC";

/// The tokens with `BETWEEN SYMMETRIC a AND b` written `BETWEEN "BETWEEN SYMMETRIC"(a) AND b`,
/// which sqlparser reads (it reads no SYMMETRIC) and the binder turns back into the symmetric
/// test, and `BETWEEN ASYMMETRIC` (the default) as plain `BETWEEN`. The lower bound ends at the
/// first AND outside parentheses and CASE ... END, as PostgreSQL's grammar has it.
fn between_symmetric_marked(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let is_word = |t: &TokenWithSpan, keyword: Keyword| unquoted_keyword(&t.token) == keyword;
    if !tokens
        .iter()
        .any(|t| is_word(t, Keyword::SYMMETRIC) || is_word(t, Keyword::ASYMMETRIC))
    {
        return tokens;
    }
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len() + 3);
    let mut open_bounds: Vec<(usize, usize)> = Vec::new();
    let (mut parens, mut cases) = (0usize, 0usize);
    let mut after_between = false;
    for token in tokens {
        let blank = is_blank(&token.token);
        match &token.token {
            Token::LParen => parens += 1,
            Token::RParen => parens = parens.saturating_sub(1),
            _ if is_word(&token, Keyword::CASE) => cases += 1,
            _ if is_word(&token, Keyword::END) => cases = cases.saturating_sub(1),
            _ => {}
        }
        if after_between && is_word(&token, Keyword::ASYMMETRIC) {
            after_between = false;
            continue;
        }
        if after_between && is_word(&token, Keyword::SYMMETRIC) {
            after_between = false;
            out.push(TokenWithSpan::wrap(Token::Word(
                sqlparser::tokenizer::Word {
                    value: SYMMETRIC_BOUND.to_owned(),
                    quote_style: Some('"'),
                    keyword: Keyword::NoKeyword,
                },
            )));
            out.push(TokenWithSpan::wrap(Token::LParen));
            open_bounds.push((parens, cases));
            continue;
        }
        if !blank {
            after_between = is_word(&token, Keyword::BETWEEN);
        }
        if is_word(&token, Keyword::AND) && open_bounds.last() == Some(&(parens, cases)) {
            open_bounds.pop();
            out.push(TokenWithSpan::wrap(Token::RParen));
            out.push(TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space)));
        }
        out.push(token);
    }
    out
}

/// The tokens with each `OPERATOR(pg_catalog.op)` made the plain `op` it names (a built-in
/// operator, which is what the plain one is): psql and pg_dump write their catalog queries so,
/// and sqlparser reads the form only where no ANY or ALL follows.
fn builtin_operators_unwrapped(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let is_operator = |t: &TokenWithSpan| matches!(&t.token, Token::Word(w) if w.keyword == Keyword::OPERATOR && w.quote_style.is_none());
    if !tokens.iter().any(is_operator) {
        return tokens;
    }
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let operator = tokens.get(i..i + 6).and_then(|window| match window {
            [op, TokenWithSpan {
                token: Token::LParen,
                ..
            }, schema, TokenWithSpan {
                token: Token::Period,
                ..
            }, inner, TokenWithSpan {
                token: Token::RParen,
                ..
            }] if is_operator(op)
                && word(&schema.token).as_deref() == Some("pg_catalog")
                && !matches!(inner.token, Token::Word(_)) =>
            {
                Some(inner.clone())
            }
            _ => None,
        });
        match operator {
            Some(inner) => {
                out.push(inner);
                i += 6;
            }
            None => {
                out.push(tokens[i].clone());
                i += 1;
            }
        }
    }
    out
}

/// The tokens without the ONLY of `FROM ONLY t`, `JOIN ONLY t` and `UPDATE ONLY t` (sqlparser
/// reads it only before an unqualified name): it says "not the tables inheriting from t", and
/// SteadyDB has no inheritance, so a table is only itself.
fn without_only(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let only = |t: &TokenWithSpan| unquoted_keyword(&t.token) == Keyword::ONLY;
    if !tokens.iter().any(only) {
        return tokens;
    }
    let solid = solid_positions(&tokens);
    let dropped: Vec<usize> = solid
        .windows(3)
        .filter(|w| {
            let before = &tokens[w[0]].token;
            only(&tokens[w[1]])
                && matches!(tokens[w[2]].token, Token::Word(_))
                && (matches!(before, Token::Comma)
                    || matches!(
                        unquoted_keyword(before),
                        Keyword::FROM | Keyword::JOIN | Keyword::UPDATE
                    ))
        })
        .map(|w| w[1])
        .collect();
    without_positions(tokens, |i| dropped.contains(&i))
}

/// For `ALTER TABLE t ALTER [COLUMN] c ADD GENERATED ...`, the name of the sequence the
/// identity column gets, `t_c_seq`.
fn identity_sequence(words: &[&Token]) -> Option<String> {
    let keyword = |i: usize| {
        words
            .get(i)
            .map_or(Keyword::NoKeyword, |t| unquoted_keyword(t))
    };
    if keyword(0) != Keyword::ALTER || keyword(1) != Keyword::TABLE {
        return None;
    }
    let mut at = 2;
    while matches!(keyword(at), Keyword::IF | Keyword::EXISTS | Keyword::ONLY) {
        at += 1;
    }
    let (table, rest) = qualified_name(words.get(at..)?).ok()?;
    let rest = match rest.get(1).map(|t| unquoted_keyword(t)) {
        Some(Keyword::COLUMN) => rest.get(2..)?,
        _ => rest.get(1..)?,
    };
    let column = word(rest.first()?)?;
    let adds_identity = rest.get(1).map(|t| unquoted_keyword(t)) == Some(Keyword::ADD)
        && rest.get(2).map(|t| unquoted_keyword(t)) == Some(Keyword::GENERATED);
    adds_identity.then(|| format!("{table}_{column}_seq"))
}

/// The tokens without an identity column's `SEQUENCE NAME name` option (pg_dump writes it;
/// sqlparser does not read it) when it names `expected`, the sequence SteadyDB gives the
/// column; another name is refused (0A000).
fn without_sequence_name(tokens: Vec<TokenWithSpan>, expected: &str) -> Result<Vec<TokenWithSpan>> {
    let solid = solid_positions(&tokens);
    let keyword = |n: usize| {
        solid
            .get(n)
            .map_or(Keyword::NoKeyword, |&i| unquoted_keyword(&tokens[i].token))
    };
    let Some(start) = (0..solid.len())
        .find(|&n| keyword(n) == Keyword::SEQUENCE && keyword(n + 1) == Keyword::NAME)
    else {
        return Ok(tokens);
    };
    let mut end = start + 2;
    while solid
        .get(end + 1)
        .is_some_and(|&i| tokens[i].token == Token::Period)
    {
        end += 2;
    }
    let named = solid.get(end).and_then(|&i| word(&tokens[i].token));
    if named.as_deref() != Some(expected) {
        return Err(SqlError::unsupported(format!(
            "an identity sequence named other than {expected}"
        )));
    }
    let (from, to) = (solid[start], solid[end]);
    Ok(without_positions(tokens, |i| (from..=to).contains(&i)))
}

/// `FETCH [direction] [FROM | IN] cursor` in the form sqlparser reads: PostgreSQL lets both the
/// direction (then NEXT) and FROM / IN be left out (`FETCH c`, `FETCH 5 c`); sqlparser wants both.
fn fetch_in_parser_form(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let solid = solid_positions(&tokens);
    let (&[first, second, ..], Some(&last)) = (&solid[..], solid.last()) else {
        return tokens;
    };
    if unquoted_keyword(&tokens[first].token) != Keyword::FETCH {
        return tokens;
    }
    let from_in = |i: usize| {
        matches!(
            unquoted_keyword(&tokens[i].token),
            Keyword::FROM | Keyword::IN
        )
    };
    let needs_next = second == last || from_in(second);
    let needs_from = !from_in(solid[solid.len() - 2]);
    let space = || TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space));
    let mut rewritten = Vec::with_capacity(tokens.len() + 4);
    for (i, token) in tokens.into_iter().enumerate() {
        if i == last && needs_from {
            rewritten.extend([TokenWithSpan::wrap(Token::make_keyword("FROM")), space()]);
        }
        rewritten.push(token);
        if i == first && needs_next {
            rewritten.extend([space(), TokenWithSpan::wrap(Token::make_keyword("NEXT"))]);
        }
    }
    rewritten
}

/// The positions of the tokens that are not whitespace.
fn solid_positions(tokens: &[TokenWithSpan]) -> Vec<usize> {
    (0..tokens.len())
        .filter(|&i| !is_blank(&tokens[i].token))
        .collect()
}

/// The tokens but those at the positions `dropped` picks.
fn without_positions(
    tokens: Vec<TokenWithSpan>,
    dropped: impl Fn(usize) -> bool,
) -> Vec<TokenWithSpan> {
    tokens
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !dropped(*i))
        .map(|(_, t)| t)
        .collect()
}

/// `CREATE USER`: PostgreSQL's CREATE ROLE with LOGIN by default (sqlparser reads it as
/// Snowflake's statement).
fn is_create_user(words: &[&Token]) -> bool {
    words.len() > 1
        && unquoted_keyword(words[0]) == Keyword::CREATE
        && unquoted_keyword(words[1]) == Keyword::USER
}

/// The tokens of a CREATE USER with USER made ROLE.
fn user_as_role(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if let Some(user) = tokens
        .iter_mut()
        .find(|t| unquoted_keyword(&t.token) == Keyword::USER)
    {
        user.token = Token::make_keyword("ROLE");
    }
    tokens
}

fn is_create_sequence(words: &[&Token]) -> bool {
    let keyword = |i: usize| {
        words
            .get(i)
            .map_or(Keyword::NoKeyword, |t| unquoted_keyword(t))
    };
    keyword(0) == Keyword::CREATE
        && (keyword(1) == Keyword::SEQUENCE
            || matches!(keyword(1), Keyword::TEMP | Keyword::TEMPORARY)
                && keyword(2) == Keyword::SEQUENCE)
}

/// CREATE SEQUENCE's options in the one order sqlparser reads them (INCREMENT, MINVALUE,
/// MAXVALUE, START, CACHE, CYCLE, OWNED BY); PostgreSQL takes them in any order, and pg_dump
/// writes START first.
fn sequence_options_in_parser_order(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let tokens: Vec<TokenWithSpan> = tokens.into_iter().filter(|t| !is_blank(&t.token)).collect();
    let Some(first) = (3..tokens.len()).find(|&i| option_rank(&tokens, i).is_some()) else {
        return tokens;
    };
    let mut ordered = tokens[..first].to_vec();
    ordered.extend(options_in_parser_order(&tokens[first..]));
    ordered
}

/// The options of each `IDENTITY (...)` (an identity column's sequence) in sqlparser's order,
/// as [`sequence_options_in_parser_order`].
fn identity_options_in_parser_order(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let tokens: Vec<TokenWithSpan> = tokens.into_iter().filter(|t| !is_blank(&t.token)).collect();
    let mut ordered = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        ordered.push(tokens[i].clone());
        let opens = unquoted_keyword(&tokens[i].token) == Keyword::IDENTITY
            && tokens.get(i + 1).is_some_and(|t| t.token == Token::LParen);
        i += 1;
        if !opens {
            continue;
        }
        let Some(close) = (i..tokens.len()).find(|&j| tokens[j].token == Token::RParen) else {
            continue;
        };
        ordered.push(tokens[i].clone());
        ordered.extend(options_in_parser_order(&tokens[i + 1..close]));
        i = close;
    }
    ordered
}

/// Sequence option clauses (the first token starts one) sorted into sqlparser's order.
fn options_in_parser_order(tokens: &[TokenWithSpan]) -> Vec<TokenWithSpan> {
    let mut clauses: Vec<(usize, Vec<TokenWithSpan>)> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let clause_rank = option_rank(tokens, i).unwrap_or(usize::MAX);
        let mut clause = vec![tokens[i].clone()];
        i += 1;
        if unquoted_keyword(&clause[0].token) == Keyword::NO {
            clause.extend(tokens.get(i).cloned());
            i += 1;
        }
        while i < tokens.len() && option_rank(tokens, i).is_none() {
            clause.push(tokens[i].clone());
            i += 1;
        }
        clauses.push((clause_rank, clause));
    }
    clauses.sort_by_key(|(rank, _)| *rank);
    clauses.into_iter().flat_map(|(_, clause)| clause).collect()
}

/// Where the sequence option starting at `tokens[i]`, if one does, goes in sqlparser's order.
fn option_rank(tokens: &[TokenWithSpan], i: usize) -> Option<usize> {
    let keyword = |t: &TokenWithSpan| unquoted_keyword(&t.token);
    let next = tokens.get(i + 1).map_or(Keyword::NoKeyword, keyword);
    match (keyword(&tokens[i]), next) {
        (Keyword::INCREMENT, _) => Some(0),
        (Keyword::MINVALUE, _) | (Keyword::NO, Keyword::MINVALUE) => Some(1),
        (Keyword::MAXVALUE, _) | (Keyword::NO, Keyword::MAXVALUE) => Some(2),
        (Keyword::START, _) => Some(3),
        (Keyword::CACHE, _) => Some(4),
        (Keyword::CYCLE, _) | (Keyword::NO, Keyword::CYCLE) => Some(5),
        (Keyword::OWNED, _) => Some(6),
        _ => None,
    }
}

fn word(token: &Token) -> Option<String> {
    match token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_lowercase()),
        Token::Word(w) => Some(w.value.clone()),
        _ => None,
    }
}

/// `[IF EXISTS] name OWNED BY table.column | NONE` after `ALTER SEQUENCE`; other forms are
/// refused (0A000).
/// `name OWNER TO role`, after `ALTER TYPE`.
fn parse_alter_type_owner(rest: &[&Token]) -> Result<Statement> {
    let (name, rest) = qualified_name(rest)?;
    let words: Vec<Option<String>> = rest.iter().map(|t| word(t)).collect();
    match words.as_slice() {
        [Some(owner_kw), Some(to), Some(owner)] if owner_kw == "owner" && to == "to" => {
            Ok(Statement::AlterTypeOwner {
                name,
                owner: owner.clone(),
            })
        }
        _ => Err(SqlError::syntax(
            "ALTER TYPE ... OWNER TO needs one role name",
        )),
    }
}

/// The tokens without a trailing `WITH [NO] DATA`, and whether it was WITH DATA (None: absent).
fn without_with_data(mut tokens: Vec<TokenWithSpan>) -> (Vec<TokenWithSpan>, Option<bool>) {
    let words = positioned_words(&tokens);
    let tail = last_words(&words, 3);
    let (cut, with_data) = match tail.as_slice() {
        [Some("data"), Some("no"), Some("with"), ..] => (3, false),
        [Some("data"), Some("with"), ..] => (2, true),
        _ => return (tokens, None),
    };
    tokens.truncate(words[words.len() - cut].0);
    (tokens, Some(with_data))
}

/// The tokens that are not blank, each with its position and its word (lower-cased), if any.
fn positioned_words(tokens: &[TokenWithSpan]) -> Vec<(usize, Option<String>)> {
    tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| !is_blank(&t.token))
        .map(|(at, t)| (at, word(&t.token)))
        .collect()
}

/// The last `n` of [`positioned_words`]' words, last first.
fn last_words(words: &[(usize, Option<String>)], n: usize) -> Vec<Option<&str>> {
    words
        .iter()
        .rev()
        .take(n)
        .map(|(_, w)| w.as_deref())
        .collect()
}

/// The tokens of a `CREATE VIEW` without its trailing `WITH [CASCADED | LOCAL] CHECK OPTION`
/// (sqlparser reads none), and which it was ("cascaded", the default, or "local").
fn without_check_option(mut tokens: Vec<TokenWithSpan>) -> (Vec<TokenWithSpan>, Option<String>) {
    let words = positioned_words(&tokens);
    if !words.iter().any(|(_, w)| w.as_deref() == Some("view")) {
        return (tokens, None);
    }
    let tail = last_words(&words, 4);
    let (cut, check) = match tail.as_slice() {
        [Some("option"), Some("check"), Some(level @ ("local" | "cascaded")), Some("with")] => {
            (4, *level)
        }
        [Some("option"), Some("check"), Some("with"), ..] => (3, "cascaded"),
        _ => return (tokens, None),
    };
    tokens.truncate(words[words.len() - cut].0);
    (tokens, Some(check.to_owned()))
}

/// A parsed `CREATE VIEW` given the check option `check` as the option `check_option`, the
/// form PostgreSQL also reads (`WITH (check_option = cascaded)`).
fn with_check_option(statement: Statement, check: String) -> Result<Statement> {
    let Statement::Sql(mut statement) = statement else {
        return Err(SqlError::syntax("syntax error at or near \"CHECK\""));
    };
    let ast::Statement::CreateView(create) = statement.as_mut() else {
        return Err(SqlError::syntax("syntax error at or near \"CHECK\""));
    };
    let option = ast::SqlOption::KeyValue {
        key: ast::Ident::new("check_option"),
        value: ast::Expr::value(ast::Value::SingleQuotedString(check)),
    };
    match &mut create.options {
        ast::CreateTableOptions::With(options) => options.push(option),
        options => *options = ast::CreateTableOptions::With(vec![option]),
    }
    Ok(Statement::Sql(statement))
}

/// `[CONCURRENTLY] name [WITH [NO] DATA]`, after `REFRESH`'s `MATERIALIZED VIEW`.
fn parse_refresh(rest: &[&Token]) -> Result<Statement> {
    let syntax =
        || SqlError::syntax("REFRESH MATERIALIZED VIEW [CONCURRENTLY] name [WITH [NO] DATA]");
    let words: Vec<Option<String>> = rest.iter().map(|t| word(t)).collect();
    if words.len() < 3
        || words[0].as_deref() != Some("materialized")
        || words[1].as_deref() != Some("view")
    {
        return Err(syntax());
    }
    let rest = &rest[2..];
    let concurrently = word(rest[0]).as_deref() == Some("concurrently");
    let rest = &rest[usize::from(concurrently)..];
    let tail: Vec<Option<String>> = rest.iter().map(|t| word(t)).collect();
    let (name_tokens, with_data) = match tail
        .iter()
        .map(Option::as_deref)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [.., Some("with"), Some("no"), Some("data")] => (&rest[..rest.len() - 3], false),
        [.., Some("with"), Some("data")] => (&rest[..rest.len() - 2], true),
        _ => (rest, true),
    };
    match table_list(name_tokens, &[])?.as_slice() {
        [name] => Ok(Statement::RefreshMaterializedView {
            name: name.clone(),
            concurrently,
            with_data,
        }),
        _ => Err(syntax()),
    }
}

/// `{ALL | name, ...} {DEFERRED | IMMEDIATE}`, after `SET CONSTRAINTS`.
fn parse_set_constraints(rest: &[&Token]) -> Result<Statement> {
    let Some((mode, names)) = rest.split_last() else {
        return Err(SqlError::syntax("syntax error at end of input"));
    };
    let deferred = match unquoted_keyword(mode) {
        Keyword::DEFERRED => true,
        Keyword::IMMEDIATE => false,
        _ => {
            return Err(SqlError::syntax(format!(
                "syntax error at or near \"{mode}\""
            )))
        }
    };
    let names = match names {
        [all] if unquoted_keyword(all) == Keyword::ALL => None,
        [] => {
            return Err(SqlError::syntax(format!(
                "syntax error at or near \"{mode}\""
            )))
        }
        names => Some(table_list(names, &[])?),
    };
    Ok(Statement::SetConstraints { names, deferred })
}

fn parse_alter_sequence(rest: &[&Token]) -> Result<Statement> {
    let words: Vec<Option<String>> = rest.iter().map(|t| word(t)).collect();
    let if_exists =
        words.first() == Some(&Some("if".into())) && words.get(1) == Some(&Some("exists".into()));
    let rest = &rest[if if_exists { 2 } else { 0 }..];
    let (sequence, rest) = qualified_name(rest)?;
    let words: Vec<Option<String>> = rest.iter().map(|t| word(t)).collect();
    if words.len() < 3 || words[0].as_deref() != Some("owned") || words[1].as_deref() != Some("by")
    {
        return Err(SqlError::unsupported(
            "ALTER SEQUENCE other than ALTER SEQUENCE ... OWNED BY",
        ));
    }
    let owner = match qualified_parts(&rest[2..])?.as_slice() {
        [none] if none == "none" => None,
        [.., table, column] => Some((table.clone(), column.clone())),
        _ => return Err(SqlError::syntax("OWNED BY needs a table's column or NONE")),
    };
    Ok(Statement::AlterSequenceOwnedBy {
        if_exists,
        sequence,
        owner,
    })
}

/// A possibly schema-qualified name at the start of `tokens` (its last part), and what follows.
fn qualified_name<'t>(tokens: &'t [&'t Token]) -> Result<(String, &'t [&'t Token])> {
    let mut end = 1;
    while tokens.get(end) == Some(&&Token::Period) {
        end += 2;
    }
    let end = end.min(tokens.len());
    let parts = qualified_parts(&tokens[..end])?;
    let name = parts
        .last()
        .cloned()
        .ok_or_else(|| SqlError::syntax("a name is missing"))?;
    Ok((name, &tokens[end..]))
}

/// The parts of a dotted name that is the whole of `tokens`.
fn qualified_parts(tokens: &[&Token]) -> Result<Vec<String>> {
    let mut parts = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        match (i % 2, word(token)) {
            (0, Some(part)) => parts.push(part),
            (1, _) if **token == Token::Period => {}
            _ => {
                return Err(SqlError::syntax(format!(
                    "syntax error at or near \"{token}\""
                )))
            }
        }
    }
    if tokens.len().is_multiple_of(2) {
        return Err(SqlError::syntax("a name is missing"));
    }
    Ok(parts)
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
    fn builtin_operators_read_as_the_plain_ones_before_any_too() {
        let qualified =
            "SELECT 1 WHERE 'r' OPERATOR(pg_catalog.=) ANY (array['r']) AND 'a' OPERATOR(pg_catalog.~) 'b'";
        let plain = "SELECT 1 WHERE 'r' = ANY (array['r']) AND 'a' ~ 'b'";
        let text = |sql: &str| match &parse(sql).unwrap()[0] {
            Statement::Sql(statement) => statement.to_string(),
            other => panic!("{other:?}"),
        };
        assert_eq!(text(qualified), text(plain));
    }

    #[test]
    fn garbage_is_a_syntax_error() {
        assert_eq!(parse("selec 1").unwrap_err().code, "42601");
        assert_eq!(parse("select 1 1").unwrap_err().code, "42601");
    }
}
