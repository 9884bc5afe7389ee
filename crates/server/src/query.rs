//! The simple and extended query protocols over the session.
//!
//! Simple query: the whole text goes to `Session::execute` (which splits it and stops at the first
//! error); each statement's notices, RowDescription, DataRows and CommandComplete are encoded on
//! the connection's thread and sent in order, then ReadyForQuery with the session's transaction
//! status. A query that is only white space or comments gets EmptyQueryResponse. COPY is taken
//! out before the session sees it (see [`crate::copy`]).
//!
//! Extended query: Parse prepares through the session ([`crate::connection::Parser`]), Bind stores
//! a portal as pgwire does (the portal keeps the raw parameters and format codes), Execute decodes the
//! parameters with the statement's types, runs the statement, and sends at most `max_rows` rows —
//! the rest stay in the portal (PortalSuspended) for the next Execute. Errors travel as
//! `Err(PgWireError::UserError)`, so pgwire skips to Sync.
//!
//! pgwire's default `on_query` / `on_execute` are replaced because they recompute the
//! transaction status from the responses; here it always comes from the session.
//!
//! Replies are queued and go out when the client asks for them — at Sync or Flush, or when the
//! buffer fills — as PostgreSQL does, so a Bind/Describe/Execute/Sync round trip costs one socket
//! write. pgwire's default `on_parse`, `on_bind` and `on_describe` flush after each of their
//! replies; they are replaced for that alone (three writes per prepared statement execution took
//! most of the server's CPU in the kernel under sysbench's point selects).

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{stream, Sink, SinkExt, StreamExt};
use pgwire::api::copy::{send_copy_in_response, send_copy_out_response};
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{CopyResponse, QueryResponse, Response, Tag};
use pgwire::api::stmt::StoredStatement;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::Type;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, DEFAULT_NAME};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::DataRow;
use pgwire::messages::data::{NoData, ParameterDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Describe, Execute, Parse, ParseComplete, PortalSuspended,
    TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{CommandComplete, EmptyQueryResponse, ReadyForQuery};
use pgwire::messages::simplequery::Query;
use pgwire::messages::PgWireBackendMessage;
use steady_sql::{Prepared, QueryResult, Session, SqlError};

use crate::connection::{Connection, Parser, Statement};
use crate::copy::command;
use crate::copy::CopyStart;
use crate::error::{error_response, notice_response, user_error};
use crate::values::{decode_params, fields, row_description, RowEncoder};

/// The most rows an Execute takes from its portal at once (see `Connection::execute_portal`).
const FETCH_CHUNK: usize = 1024;

#[async_trait]
impl SimpleQueryHandler for Connection {
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        self.cancel.begin();
        let outcome = SimpleQueryHandler::do_query(self, client, &query.query).await;
        if matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            return outcome.map(drop);
        }
        self.cancel.end();
        client.set_state(PgWireConnectionState::ReadyForQuery);
        outcome?;
        let status = client.transaction_status();
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                status,
            )))
            .await?;
        Ok(())
    }

    /// Runs the query and sends everything it produces; nothing is left for pgwire to send.
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match command::parse(query) {
            Some(Ok(copy)) => self.simple_copy(client, Arc::new(copy)).await?,
            Some(Err(err)) => send_error(client, &err).await?,
            None => self.simple_statements(client, query).await?,
        }
        Ok(Vec::new())
    }
}

impl Connection {
    async fn simple_statements<C>(&self, client: &mut C, query: &str) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let sql = query.to_owned();
        let messages = self
            .run(client, move |session| {
                let results = session.execute(&sql);
                simple_messages(&results)
            })
            .await?;
        if messages.is_empty() {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
        }
        for message in messages {
            client.feed(message).await?;
        }
        Ok(())
    }

    async fn simple_copy<C>(
        &self,
        client: &mut C,
        copy: Arc<command::CopyCommand>,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match self.start_copy(client, copy).await? {
            Ok(CopyStart::In(columns)) => {
                send_copy_in_response(client, copy_in_response(columns)).await?;
                client.set_state(PgWireConnectionState::CopyInProgress(false));
            }
            Ok(CopyStart::Out(out)) => {
                let tag = self.send_copy_out(client, out).await?;
                client
                    .feed(PgWireBackendMessage::CommandComplete(tag.into()))
                    .await?;
            }
            Err(err) => send_error(client, &err).await?,
        }
        Ok(())
    }

    /// Runs a bound SQL statement: rows become a [`Response::Query`] the portal keeps.
    async fn execute_prepared<C>(
        &self,
        client: &mut C,
        portal: &Portal<Statement>,
        prepared: &Arc<Prepared>,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let params = match decode_params(
            &portal.parameters,
            &portal.parameter_format,
            &prepared.params,
        ) {
            Ok(params) => params,
            Err(err) => {
                self.run(client, Session::fail_block).await?;
                return Err(user_error(&err));
            }
        };
        let format = portal.result_column_format.clone();
        let prepared = Arc::clone(prepared);
        let (result, rows) = self
            .run(client, move |session| {
                let result = session.execute_prepared(&prepared, &params)?;
                let rows = encode_rows(&result, &format)?;
                Ok::<_, SqlError>((result, rows))
            })
            .await?
            .map_err(|err| user_error(&err))?;
        for notice in &result.notices {
            client
                .feed(PgWireBackendMessage::NoticeResponse(notice_response(
                    notice,
                )))
                .await?;
        }
        for message in parameter_statuses(&result) {
            client.feed(message).await?;
        }
        if !result.has_rows() {
            return Ok(Response::Execution(Tag::new(&result.tag)));
        }
        let schema = Arc::new(fields(&result.columns, &portal.result_column_format));
        let mut response = QueryResponse::new(schema, stream::iter(rows.into_iter().map(Ok)));
        response.set_command_tag(&result.tag);
        Ok(Response::Query(response))
    }

    /// Executes a portal, or goes on with one an earlier Execute suspended, sending at most
    /// `max_rows` rows (all when 0).
    async fn execute_portal<C>(
        &self,
        client: &mut C,
        portal: &Portal<Statement>,
        max_rows: usize,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let fresh = matches!(*portal.state().lock().await, PortalExecutionState::Initial);
        if fresh {
            match ExtendedQueryHandler::do_query(self, client, portal, max_rows).await? {
                Response::Query(rows) => portal.start(rows).await,
                other => return send_extended_response(client, other).await,
            }
        }
        // Fetched a chunk at a time: pgwire reserves room for as many rows as it is asked for,
        // and an Execute may ask for up to 2^31 - 1 (one such message aborted the process on a
        // failed allocation of tens of GB; found by the `wire` fuzz target).
        let mut sent = 0;
        let (tag, suspended) = loop {
            let chunk = match max_rows {
                0 => 0,
                _ => (max_rows - sent).min(FETCH_CHUNK),
            };
            let fetched = portal.fetch(chunk).await?;
            let mut response = fetched.response;
            while let Some(row) = response.data_rows().next().await {
                client.feed(PgWireBackendMessage::DataRow(row?)).await?;
                sent += 1;
            }
            if !fetched.suspended || sent == max_rows {
                break (response.command_tag().to_owned(), fetched.suspended);
            }
        };
        if suspended {
            client
                .feed(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
                .await?;
        } else {
            let tag = if fresh {
                tag
            } else {
                continued_tag(&tag, sent)
            };
            client
                .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                    tag,
                )))
                .await?;
        }
        Ok(())
    }
}

#[async_trait]
impl ExtendedQueryHandler for Connection {
    type Statement = Statement;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        Arc::clone(&self.parser)
    }

    /// As pgwire's, but ParseComplete is queued, not flushed: see the module doc.
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        match StoredStatement::parse(client, &message, self.query_parser()).await? {
            Some(statement) => client.portal_store().put_statement(Arc::new(statement)),
            None => client.portal_store().put_empty_statement(name),
        }
        client
            .feed(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
            .await?;
        Ok(())
    }

    /// As pgwire's, but BindComplete is queued, not flushed: see the module doc.
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal_name = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
        match client.portal_store().get_statement(statement_name) {
            Some(Entry::Value(statement)) => {
                let portal = Portal::try_new(&message, statement)?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Some(Entry::Empty) if message.parameters.is_empty() => {
                client.portal_store().put_empty_portal(portal_name);
            }
            Some(Entry::Empty) => {
                return Err(user_error(&SqlError::new(
                    "08P01",
                    format!(
                        "bind message supplies {} parameters, but prepared statement \"{statement_name}\" requires 0",
                        message.parameters.len()
                    ),
                )))
            }
            None => return Err(PgWireError::StatementNotFound(statement_name.to_owned())),
        }
        client
            .feed(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(())
    }

    /// As pgwire's, but the description is queued, not flushed: see the module doc.
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let (parameters, fields) = match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => match client.portal_store().get_statement(name) {
                Some(Entry::Value(statement)) => {
                    let described = self.do_describe_statement(client, &statement).await?;
                    (Some(described.parameters), described.fields)
                }
                Some(Entry::Empty) => (Some(Vec::new()), Vec::new()),
                None => return Err(PgWireError::StatementNotFound(name.to_owned())),
            },
            TARGET_TYPE_BYTE_PORTAL => match client.portal_store().get_portal(name) {
                Some(Entry::Value(portal)) => {
                    (None, self.do_describe_portal(client, &portal).await?.fields)
                }
                Some(Entry::Empty) => (None, Vec::new()),
                // A cursor is a portal too (psycopg describes its server-side cursors so).
                None => {
                    let cursor = name.to_owned();
                    let columns = self
                        .run(client, move |session| session.cursor_description(&cursor))
                        .await?
                        .ok_or_else(|| PgWireError::PortalNotFound(name.to_owned()))?;
                    (None, fields(&columns, &Format::UnifiedText))
                }
            },
            other => return Err(PgWireError::InvalidTargetType(other)),
        };
        // pgwire's rule: NoData when there is nothing to describe at all.
        let no_data = fields.is_empty() && parameters.as_ref().is_none_or(Vec::is_empty);
        if let Some(parameters) = parameters {
            let oids = parameters.iter().map(Type::oid).collect();
            client
                .feed(PgWireBackendMessage::ParameterDescription(
                    ParameterDescription::new(oids),
                ))
                .await?;
        }
        let description = if no_data {
            PgWireBackendMessage::NoData(NoData::new())
        } else {
            PgWireBackendMessage::RowDescription(row_description(&fields))
        };
        client.feed(description).await?;
        Ok(())
    }

    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal = match client.portal_store().get_portal(name) {
            Some(Entry::Value(portal)) => portal,
            Some(Entry::Empty) => {
                return client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(
                        EmptyQueryResponse::new(),
                    ))
                    .await
                    .map_err(Into::into);
            }
            None => return Err(PgWireError::PortalNotFound(name.to_owned())),
        };
        client.set_state(PgWireConnectionState::QueryInProgress);
        self.cancel.begin();
        let max_rows = usize::try_from(message.max_rows).unwrap_or(0);
        let outcome = self.execute_portal(client, &portal, max_rows).await;
        if !matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            self.cancel.end();
            client.set_state(PgWireConnectionState::ReadyForQuery);
        }
        outcome
    }

    /// Runs the portal's statement: a query's rows come back for the portal to keep, a COPY
    /// starts (FROM) or is streamed (TO).
    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Statement>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match &portal.statement.statement {
            Statement::Sql(prepared) => self.execute_prepared(client, portal, prepared).await,
            Statement::Copy(copy) => {
                let started = self
                    .start_copy(client, Arc::clone(copy))
                    .await?
                    .map_err(|err| user_error(&err))?;
                Ok(match started {
                    CopyStart::In(columns) => Response::CopyIn(copy_in_response(columns)),
                    CopyStart::Out(out) => {
                        Response::Execution(self.send_copy_out(client, out).await?)
                    }
                })
            }
        }
    }
}

/// Sends an Execute's response in full.
async fn send_extended_response<C>(client: &mut C, response: Response) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    match response {
        Response::EmptyQuery => {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?
        }
        Response::Execution(tag)
        | Response::TransactionStart(tag)
        | Response::TransactionEnd(tag) => {
            client
                .feed(PgWireBackendMessage::CommandComplete(tag.into()))
                .await?
        }
        Response::Error(info) => return Err(PgWireError::UserError(info)),
        Response::CopyIn(copy) => {
            client.set_state(PgWireConnectionState::CopyInProgress(true));
            send_copy_in_response(client, copy).await?
        }
        Response::CopyOut(copy) | Response::CopyBoth(copy) => {
            send_copy_out_response(client, copy).await?
        }
        Response::Query(mut rows) => {
            let tag = rows.command_tag().to_owned();
            while let Some(row) = rows.data_rows().next().await {
                client.feed(PgWireBackendMessage::DataRow(row?)).await?;
            }
            client
                .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                    tag,
                )))
                .await?
        }
    }
    Ok(())
}

/// CopyInResponse for a text-format COPY FROM.
fn copy_in_response(columns: usize) -> CopyResponse {
    CopyResponse::new(0, columns, stream::empty())
}

async fn send_error<C>(client: &mut C, err: &SqlError) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    client
        .feed(PgWireBackendMessage::ErrorResponse(error_response(err)))
        .await?;
    Ok(())
}

/// The messages of a simple query's results, in order.
fn simple_messages(results: &[Result<QueryResult, SqlError>]) -> Vec<PgWireBackendMessage> {
    let mut messages = Vec::new();
    for result in results {
        let encoded = result
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|r| encode_rows(r, &Format::UnifiedText).map(|rows| (r, rows)));
        let (result, rows) = match encoded {
            Ok(encoded) => encoded,
            Err(err) => {
                messages.push(PgWireBackendMessage::ErrorResponse(error_response(&err)));
                break;
            }
        };
        messages.extend(
            result
                .notices
                .iter()
                .map(|n| PgWireBackendMessage::NoticeResponse(notice_response(n))),
        );
        messages.extend(parameter_statuses(result));
        if result.has_rows() {
            let description = row_description(&fields(&result.columns, &Format::UnifiedText));
            messages.push(PgWireBackendMessage::RowDescription(description));
            messages.extend(rows.into_iter().map(PgWireBackendMessage::DataRow));
        }
        messages.push(PgWireBackendMessage::CommandComplete(CommandComplete::new(
            result.tag.clone(),
        )));
    }
    messages
}

/// A result's rows as DataRows in the requested formats.
fn encode_rows(result: &QueryResult, format: &Format) -> Result<Vec<DataRow>, SqlError> {
    let encoder = RowEncoder::new(&result.columns, format);
    result.rows.iter().map(|row| encoder.encode(row)).collect()
}

/// The tag of a portal finished by a later Execute: the command and the rows this one sent.
fn continued_tag(tag: &str, rows: usize) -> String {
    let command = match tag.rsplit_once(' ') {
        Some((command, count)) if count.parse::<u64>().is_ok() => command,
        _ => tag,
    };
    format!("{command} {rows}")
}

/// ParameterStatus messages for the reported parameters a statement changed (`SET TimeZone`...),
/// as PostgreSQL sends them before the statement's CommandComplete.
fn parameter_statuses(result: &QueryResult) -> impl Iterator<Item = PgWireBackendMessage> + '_ {
    result.reported.iter().map(|(name, value)| {
        PgWireBackendMessage::ParameterStatus(pgwire::messages::startup::ParameterStatus::new(
            (*name).to_owned(),
            value.clone(),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continued_tags_count_this_execute() {
        assert_eq!(continued_tag("SELECT 10", 3), "SELECT 3");
        assert_eq!(continued_tag("INSERT 0 10", 3), "INSERT 0 3");
        assert_eq!(continued_tag("SHOW", 1), "SHOW 1");
    }
}
