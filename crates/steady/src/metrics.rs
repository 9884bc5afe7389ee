//! The opt-in Prometheus endpoint: with `metrics_listen = "127.0.0.1:9187"` in steady.toml,
//! `steady serve` answers `GET /metrics` there with every `steady_metrics` figure in
//! Prometheus' text exposition format (0.0.4), as `steady_<name> <value>` (untyped: the view
//! mixes counters and gauges). Each scrape reads the view through a session of its own, as a
//! client would; anything but `GET /metrics` is 404. The endpoint serves plain HTTP without
//! authentication, so keep it on loopback or a private network.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use steady_sql::Database;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The most of a request read (its request line is all that matters).
const MAX_REQUEST: usize = 8192;
/// How long a client may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Answers scrapes on `listener` until the runtime stops.
pub async fn serve(listener: TcpListener, db: Arc<Database>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let db = Arc::clone(&db);
        tokio::spawn(async move {
            if let Err(err) = answer(stream, db).await {
                tracing::debug!("metrics request: {err}");
            }
        });
    }
}

async fn answer(mut stream: TcpStream, db: Arc<Database>) -> std::io::Result<()> {
    let head = tokio::time::timeout(REQUEST_TIMEOUT, read_head(&mut stream))
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    let target = head.split_whitespace().take(2).collect::<Vec<_>>();
    let (status, body) = if target == ["GET", "/metrics"] {
        let body = tokio::task::spawn_blocking(move || exposition(&db))
            .await
            .map_err(std::io::Error::other)?;
        match body {
            Ok(body) => ("200 OK", body),
            Err(err) => ("500 Internal Server Error", format!("{err}\n")),
        }
    } else {
        (
            "404 Not Found",
            "only GET /metrics is served here\n".to_owned(),
        )
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// The request's head: everything up to the blank line, at most [`MAX_REQUEST`] bytes.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

/// Every `steady_metrics` figure as `steady_<name> <value>` lines.
fn exposition(db: &Arc<Database>) -> Result<String, steady_sql::SqlError> {
    let mut session = db.session("steady_metrics_endpoint");
    let mut results = session.execute("SELECT name, value FROM steady_metrics");
    let result = results.pop().unwrap_or_else(|| Ok(Default::default()))?;
    let mut body = String::new();
    for row in &result.rows {
        let (Some(name), Some(value)) = (row[0].to_pg_text(), row[1].to_pg_text()) else {
            continue;
        };
        let _ = writeln!(body, "# TYPE steady_{name} untyped\nsteady_{name} {value}");
    }
    Ok(body)
}
