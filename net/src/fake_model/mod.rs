//! A fake model server for the real CLIs: OpenAI chat completions, OpenAI Responses and Anthropic
//! Messages on 127.0.0.1, answering every model call by a scripted scenario (a plain answer, a
//! tool call, an error, a length cut, a dropped stream...), so moot-doctor and the end-to-end
//! tests can run a real CLI without a real model and know the verdict to expect.
//!
//! It is the only fake model: the end-to-end suite and the capture scripts (scripts/realcli/)
//! run it as `moot-doctor --serve`. It began as a port of a Python server the captures in
//! testdata/ were first recorded against, with the same texts and shapes.
//! The scenario of a request is, first match wins: the URL prefix `/s/<scenario>/…`, the line
//! given to [`FakeModel::set_scenario`], the first line of [`Options::scenario_file`] (re-read
//! on every request), `plain`.
//!
//! An unknown scenario is answered with HTTP 400 naming it (a typo in a test must not pass as
//! `plain`), and nothing is read from the environment (what the retry scenarios do and the
//! legacy result are [`Options`] fields, `--retry-fails` and the like with `--serve`).
//!
//! [`plan`] decides the answer whatever the wire API; [`chat`], [`responses`] and [`anthropic`]
//! encode it; [`server`] routes, records and plays it.

pub mod anthropic;
#[cfg(test)]
mod captures;
pub mod chat;
pub mod plan;
pub mod responses;
pub mod scenario;
pub mod server;
pub mod sse;
#[cfg(test)]
mod tests;

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

use serde::Serialize;

pub use plan::{Api, Plan};
pub use scenario::Scenario;

/// How a fake model server runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The port on 127.0.0.1; `None` lets the kernel pick a free one.
    pub port: Option<u16>,
    /// A file whose first line names the scenario, re-read on every request.
    pub scenario_file: Option<PathBuf>,
    /// A JSONL file every request is appended to (see [`Request`]).
    pub log: Option<PathBuf>,
    /// A directory every JSON request body is written to, for capturing what a CLI sends.
    pub dump_dir: Option<PathBuf>,
    /// How many calls `retry` and `retry500` fail before recovering.
    pub retry_fails: u32,
    /// The scenario they recover into (`plain` when unset).
    pub retry_then: Option<String>,
    /// Answer with the legacy `{"status":"ok"}` gitmoot_result.
    pub legacy_result: bool,
    /// Answer a model call 401 unless its Authorization or x-api-key header carries this key.
    pub required_key: Option<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            port: None,
            scenario_file: None,
            log: None,
            dump_dir: None,
            retry_fails: 1,
            retry_then: None,
            legacy_result: false,
            required_key: None,
        }
    }
}

/// One request the server answered, as the log records it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Request {
    /// When it arrived, in seconds since the epoch.
    pub t: f64,
    /// The HTTP method.
    pub method: String,
    /// The path as requested, with any `/s/<scenario>` and `/v1` prefix.
    pub path: String,
    /// The wire API it was served as.
    pub api: Api,
    /// The scenario line in force.
    pub scenario: String,
    /// The User-Agent header.
    #[serde(rename = "ua")]
    pub user_agent: Option<String>,
    /// Whether it carried an Authorization or x-api-key header.
    pub auth: bool,
    /// The body's size in bytes (model calls).
    pub bytes: usize,
    /// The model the body names.
    pub model: Option<String>,
    /// The body's `stream` flag, when it has one.
    pub stream: Option<bool>,
    /// The names of the tools the body offers.
    pub tool_names: Vec<String>,
    /// How many tool results the conversation carried.
    pub tool_results: usize,
    /// What the server answered (model calls).
    pub plan: Option<Plan>,
    /// The token counts the reply reports (model calls): what a CLI's usage must add up to.
    pub usage: Option<SentUsage>,
}

/// The usage a reply reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SentUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A fake model server running on its own thread; dropping it stops the server.
pub struct FakeModel {
    shared: Arc<server::Shared>,
    port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeModel {
    /// Binds 127.0.0.1 and serves on a new thread until dropped.
    pub fn start(options: Options) -> io::Result<FakeModel> {
        let (shared, listener, port) = prepare(options)?;
        let runtime = crate::http::runtime()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("fake-model".into())
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::select! {
                        _ = serve(serving, listener, None) => {}
                        _ = stopped => {}
                    }
                });
            })?;
        Ok(FakeModel {
            shared,
            port,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`, the base a CLI's provider config points at (add `/v1` or
    /// `/s/<scenario>/v1` as the CLI expects).
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Sets the scenario for requests whose URL names none (same grammar as the scenario file's
    /// first line); an unknown scenario is an error naming it, and changes nothing.
    pub fn set_scenario(&self, line: &str) -> Result<(), String> {
        self.shared.set_scenario(line)
    }

    /// Every request answered since the start or the last [`FakeModel::reset`].
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests()
    }

    /// Clears the retry counters and the request list.
    pub fn reset(&self) {
        self.shared.reset()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Serves on the calling thread until the process ends (`moot-doctor --serve`), behind `tls` when
/// given; `ready` gets the port once the server listens.
pub fn serve_forever(
    options: Options,
    tls: Option<crate::http::Tls>,
    ready: impl FnOnce(u16),
) -> io::Result<()> {
    let (shared, listener, port) = prepare(options)?;
    let runtime = crate::http::runtime()?;
    ready(port);
    runtime.block_on(serve(shared, listener, tls))
}

fn prepare(options: Options) -> io::Result<(Arc<server::Shared>, std::net::TcpListener, u16)> {
    let listener = match options.port {
        None => crate::http::bind_loopback()?,
        Some(port) => {
            let listener =
                std::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))?;
            listener.set_nonblocking(true)?;
            listener
        }
    };
    let port = listener.local_addr()?.port();
    let shared = server::Shared::new(options)
        .map_err(|error| io::Error::new(io::ErrorKind::InvalidInput, error))?;
    Ok((Arc::new(shared), listener, port))
}

async fn serve(
    shared: Arc<server::Shared>,
    listener: std::net::TcpListener,
    tls: Option<crate::http::Tls>,
) -> io::Result<()> {
    crate::http::serve_with(listener, tls, move |request| {
        server::handle(Arc::clone(&shared), request)
    })
    .await
}
