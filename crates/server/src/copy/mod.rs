//! COPY FROM STDIN and COPY TO STDOUT, in the simple and the extended protocol.
//!
//! [`command`] reads the statement, [`format`] the text and CSV data, [`load`] moves rows through
//! the session. This module joins them to the protocol: a COPY FROM answers CopyInResponse and
//! keeps a [`load::CopyIn`] on the connection while CopyData arrives (loaded every few hundred
//! KiB, with a cancel check point before each load); CopyDone finishes it with `COPY n`, CopyFail
//! or any error undoes it. A COPY TO runs its query and streams CopyOutResponse, a CopyData per
//! line, CopyDone.

pub mod command;
pub mod format;
pub mod load;

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::copy::CopyHandler;
use pgwire::api::results::Tag;
use pgwire::api::ClientInfo;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyOutResponse};
use pgwire::messages::PgWireBackendMessage;
use steady_sql::SqlError;

use crate::connection::Connection;
use crate::error::user_error;
use command::{CopyCommand, CopySource, Direction};
use load::{copy_out, table_query, CopyIn, CopyOut};

/// What starting a COPY led to.
pub enum CopyStart {
    /// COPY FROM: the connection now waits for data for this many columns.
    In(usize),
    /// COPY TO: the query's output, to be sent.
    Out(CopyOut),
}

impl Connection {
    /// Starts a COPY: checks the target, and for COPY FROM keeps its state on the connection.
    pub(crate) async fn start_copy<C>(
        &self,
        client: &mut C,
        command: Arc<CopyCommand>,
    ) -> PgWireResult<Result<CopyStart, SqlError>>
    where
        C: ClientInfo + Send,
    {
        let started = self
            .run(client, move |session| {
                match (&command.source, command.direction) {
                    (CopySource::Table { name, columns }, Direction::FromStdin) => {
                        CopyIn::start(session, name, columns, &command.options)
                            .map(|copy| CopyStartState::In(Box::new(copy)))
                    }
                    (CopySource::Table { name, columns }, Direction::ToStdout) => copy_out(
                        session,
                        &table_query(session, name, columns),
                        &command.options,
                    )
                    .map(CopyStartState::Out),
                    (CopySource::Query(query), _) => {
                        copy_out(session, query, &command.options).map(CopyStartState::Out)
                    }
                }
            })
            .await?;
        Ok(started.map(|state| match state {
            CopyStartState::In(copy) => {
                let columns = copy.columns();
                self.put_copy(*copy);
                CopyStart::In(columns)
            }
            CopyStartState::Out(out) => CopyStart::Out(out),
        }))
    }

    /// Streams a COPY TO's output and returns its command tag.
    pub(crate) async fn send_copy_out<C>(&self, client: &mut C, out: CopyOut) -> PgWireResult<Tag>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let formats = vec![0; out.columns];
        client
            .feed(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
                0,
                out.columns as i16,
                formats,
            )))
            .await?;
        for (data, ends) in &out.chunks {
            let mut start = 0;
            for &end in ends {
                let line = data.slice(start..end);
                start = end;
                client
                    .feed(PgWireBackendMessage::CopyData(CopyData::new(line)))
                    .await?;
            }
        }
        client
            .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
            .await?;
        Ok(Tag::new("COPY").with_rows(out.rows))
    }

    /// Loads or finishes the COPY in progress on the connection's thread; on an error the COPY is
    /// undone and the error returned.
    async fn advance_copy<C, T, F>(&self, client: &mut C, step: F) -> PgWireResult<T>
    where
        C: ClientInfo + Send,
        F: FnOnce(&mut CopyIn, &mut steady_sql::Session) -> Result<T, SqlError> + Send + 'static,
        T: Send + 'static,
    {
        let Some(mut copy) = self.take_copy() else {
            return Err(user_error(&SqlError::new(
                "08P01",
                "COPY data arrived with no COPY in progress",
            )));
        };
        let cancel = Arc::clone(&self.cancel);
        let outcome = self
            .run(client, move |session| {
                match cancel.check().and_then(|()| step(&mut copy, session)) {
                    Ok(value) => Ok((value, copy)),
                    Err(err) => {
                        copy.abort(session);
                        Err(err)
                    }
                }
            })
            .await?;
        match outcome {
            Ok((value, copy)) => {
                self.put_copy(copy);
                Ok(value)
            }
            Err(err) => {
                self.cancel.end();
                Err(user_error(&err))
            }
        }
    }
}

/// The state a COPY start leaves, before it is kept on the connection.
enum CopyStartState {
    In(Box<CopyIn>),
    Out(CopyOut),
}

#[async_trait]
impl CopyHandler for Connection {
    async fn on_copy_data<C>(&self, client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !self.queue_copy_data(&data.data) {
            return Ok(());
        }
        self.advance_copy(client, |copy, session| copy.load(session))
            .await
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let copied = self
            .advance_copy(client, |copy, session| copy.finish(session))
            .await?;
        // The COPY is over: drop its state.
        self.take_copy();
        self.cancel.end();
        let tag = Tag::new("COPY").with_rows(copied as usize);
        client
            .send(PgWireBackendMessage::CommandComplete(tag.into()))
            .await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let failed = user_error(&SqlError::new(
            "57014",
            format!("COPY from stdin failed: {}", fail.message),
        ));
        if let Some(copy) = self.take_copy() {
            // The client gave up; undoing is best effort and its outcome is not news to it.
            let _ = self.run(client, move |session| copy.abort(session)).await;
        }
        self.cancel.end();
        failed
    }
}
