//! Serving a router to clients that may be hostile: at most so many
//! requests at once and so many bytes of bodies being read, a body refused
//! from its declared length, header and body timeouts, and a stop on
//! SIGINT or SIGTERM that lets the requests in flight finish.

use axum::Router;

use crate::network::Network;
use crate::routes::router;
use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// How much of a server its clients may hold at once, and for how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestLimits {
    /// Connections open at once; past it, the server takes no more until
    /// one closes (they wait in the listener's backlog).
    pub max_connections: usize,
    /// Requests served at once; past it, 503 at once.
    pub max_requests: usize,
    /// Bytes of request bodies being read or held at once; a request whose
    /// body would pass it gets 503 at once. A body of unknown length
    /// counts as [`max_body_bytes`](Self::max_body_bytes).
    pub max_body_bytes_in_flight: usize,
    /// One request's body: a longer one gets 413, from its `Content-Length`
    /// before any of it is read.
    pub max_body_bytes: usize,
    /// How long a client may take to send a request's headers, counted
    /// from the end of the last answer on the connection: also how long an
    /// idle connection stays open (HTTP/2's, or one that sends nothing, at
    /// most twice as long). Past it, the connection closes. Longer
    /// than agents keep an idle connection for another request (90 s for
    /// reqwest's pool), or a request they send as it closes is lost.
    pub header_timeout: Duration,
    /// How long a client may take to send a request's body; past it, 408.
    pub body_timeout: Duration,
}

impl RequestLimits {
    /// The defaults, for bodies of at most `max_body_bytes`: 4,096
    /// connections and 1,024 requests at once, 256 MiB of bodies, 120 s for
    /// the headers, 60 s for a body.
    pub const fn new(max_body_bytes: usize) -> Self {
        Self {
            max_connections: 4096,
            max_requests: 1024,
            max_body_bytes_in_flight: 256 << 20,
            max_body_bytes,
            header_timeout: Duration::from_secs(120),
            body_timeout: Duration::from_secs(60),
        }
    }
}

/// The most a connection buffers of a request's headers (hyper's default
/// is 400 KiB): what a client that never finishes its headers holds.
const MAX_HEADER_BUFFER: usize = 64 << 10;

/// How long a stop waits for the requests in flight before it closes their
/// connections (icp-cli gives a network it stops 10 s).
const GRACE: Duration = Duration::from_secs(5);

/// The most of a refused body the server reads (and drops) before it
/// answers: a client that sends its whole body before reading, as most
/// do, then reads the 413 and its reason, where a connection closed under
/// it would be reset. A longer body is refused at once.
const MAX_DISCARDED_BYTES: u64 = 64 << 20;

/// Reads and drops `body` for at most `within`.
async fn discard(mut body: Body, within: Duration) {
    let drained = async move {
        let mut body = std::pin::Pin::new(&mut body);
        while let Some(Ok(_)) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {}
    };
    let _ = tokio::time::timeout(within, drained).await;
}

/// What the guard counts: requests, and bodies' bytes in KiB (a semaphore
/// takes at most `u32::MAX` permits at once).
struct Guard {
    limits: RequestLimits,
    requests: Semaphore,
    body_kib: Semaphore,
}

fn refuse(status: StatusCode, message: String) -> Response {
    let mut response =
        (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], message).into_response();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

fn kib(bytes: u64) -> u32 {
    u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX)
}

/// Admits a request within the limits and reads its body before the
/// router sees it, so that no handler waits on a client.
async fn guard(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let limits = &guard.limits;
    let Ok(_serving) = guard.requests.try_acquire() else {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "The server is serving {} requests at once, its limit: retry shortly.",
                limits.max_requests
            ),
        );
    };
    let max = limits.max_body_bytes as u64;
    let declared = request.body().size_hint().upper();
    if let Some(length) = declared
        && length > max
    {
        if length <= MAX_DISCARDED_BYTES {
            discard(request.into_body(), limits.body_timeout).await;
        }
        return refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("The request's body is {length} bytes, more than the {max} this server accepts."),
        );
    }
    let Ok(_reading) = guard.body_kib.try_acquire_many(kib(declared.unwrap_or(max))) else {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "The server is reading {} MiB of request bodies at once, its limit: retry shortly.",
                limits.max_body_bytes_in_flight >> 20
            ),
        );
    };
    let (parts, body) = request.into_parts();
    let body =
        match tokio::time::timeout(limits.body_timeout, axum::body::to_bytes(body, limits.max_body_bytes))
            .await
        {
            Ok(Ok(body)) => body,
            Ok(Err(_)) if declared.is_none() => {
                return refuse(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("The request's body is more than the {max} bytes this server accepts."),
                );
            }
            Ok(Err(e)) => {
                return refuse(StatusCode::BAD_REQUEST, format!("The request's body could not be read: {e}"));
            }
            Err(_) => {
                return refuse(
                    StatusCode::REQUEST_TIMEOUT,
                    format!("The request's body did not arrive within {} s.", limits.body_timeout.as_secs()),
                );
            }
        };
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// `router` behind the guard of `limits`.
fn guarded(router: Router, limits: RequestLimits) -> Router {
    let guard = Arc::new(Guard {
        requests: Semaphore::new(limits.max_requests.min(Semaphore::MAX_PERMITS)),
        body_kib: Semaphore::new(
            (kib(limits.max_body_bytes_in_flight as u64) as usize).min(Semaphore::MAX_PERMITS),
        ),
        limits,
    });
    router.layer(axum::middleware::from_fn_with_state(guard, self::guard))
}

/// Serves `router` on `listener` within `limits` (HTTP/1.1 and cleartext
/// HTTP/2) until `stop` completes; then takes no more connections and
/// waits up to 5 s for the requests in flight.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: RequestLimits,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()> {
    if limits.max_connections == 0 || limits.max_requests == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a server needs at least one connection and one request at once",
        ));
    }
    let header_timeout = limits.header_timeout;
    let open = Arc::new(Semaphore::new(limits.max_connections.min(Semaphore::MAX_PERMITS)));
    let router = guarded(router, limits);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(MAX_HEADER_BUFFER);
    let connections = GracefulShutdown::new();
    tokio::pin!(stop);
    loop {
        let (stream, slot) = tokio::select! {
            accepted = accept(&listener, &open) => match accepted {
                Ok(accepted) => accepted,
                // Out of file descriptors, or a connection reset before it
                // was taken: the listener itself is fine.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let activity = Arc::new(Activity::default());
        let service = {
            let (inner, activity) = (TowerToHyperService::new(router.clone()), activity.clone());
            hyper::service::service_fn(move |request| {
                let active = activity.enter();
                let answer = hyper::service::Service::call(&inner, request);
                async move {
                    let answer = answer.await;
                    drop(active);
                    answer
                }
            })
        };
        let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service).into_owned();
        let connection = connections.watch(connection);
        tokio::spawn(async move {
            tokio::pin!(connection);
            // Hyper times out slow HTTP/1.1 headers, but not a connection
            // that sends nothing, nor one that starts HTTP/2 and idles: one
            // with no request for a whole period, and none running, closes.
            let mut seen = 0;
            loop {
                tokio::select! {
                    _ = &mut connection => break,
                    () = tokio::time::sleep(header_timeout) => {
                        let started = activity.started.load(Ordering::Relaxed);
                        if started == seen && activity.running.load(Ordering::Relaxed) == 0 {
                            break;
                        }
                        seen = started;
                    }
                }
            }
            drop(slot);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(GRACE, connections.shutdown()).await;
    Ok(())
}

/// A connection's requests: how many started, how many run.
#[derive(Default)]
struct Activity {
    started: AtomicU64,
    running: AtomicUsize,
}

/// A request running on a connection, until dropped.
struct Running(Arc<Activity>);

impl Activity {
    fn enter(self: &Arc<Self>) -> Running {
        self.started.fetch_add(1, Ordering::Relaxed);
        self.running.fetch_add(1, Ordering::Relaxed);
        Running(self.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The next connection, once one of the `open` slots is free.
async fn accept(
    listener: &TcpListener,
    open: &Arc<Semaphore>,
) -> std::io::Result<(tokio::net::TcpStream, tokio::sync::OwnedSemaphorePermit)> {
    let slot = open.clone().acquire_owned().await.expect("the semaphore is never closed");
    let (stream, _) = listener.accept().await?;
    Ok((stream, slot))
}

/// Catches SIGINT and SIGTERM from now on (their default action, ending
/// the process at once, no longer applies); the future completes on the
/// first of them. Needs a tokio runtime.
fn catch_interrupts() -> std::io::Result<impl Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}

/// Serves `network` on 127.0.0.1 and a free port, on the current tokio
/// runtime, until the runtime ends; returns its URL. For tests and tools
/// that run a network in-process.
///
/// ```no_run
/// # async fn serve(network: ic_http::Network) {
/// let url = ic_http::serve_locally(network).await.unwrap();
/// assert!(url.starts_with("http://127.0.0.1:"));
/// # }
/// ```
pub async fn serve_locally(network: Network) -> std::io::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let limits = RequestLimits::new(crate::routes::MAX_REQUEST_BYTES);
    tokio::spawn(serve(listener, router(network), limits, std::future::pending()));
    Ok(url)
}

/// Where a server listens and says it does.
#[derive(Clone, Copy, Debug)]
pub struct Listen<'a> {
    /// The address to bind: 127.0.0.1 keeps the server to this machine.
    pub ip: std::net::IpAddr,
    /// The port (0: any free port).
    pub port: u16,
    /// Where to write the port once connections are accepted. It is created
    /// exclusively: if it exists, another server owns it.
    pub port_file: Option<&'a std::path::Path>,
}

impl Listen<'_> {
    /// 127.0.0.1:`port`, with no port file.
    pub fn local(port: u16) -> Self {
        Self { ip: std::net::Ipv4Addr::LOCALHOST.into(), port, port_file: None }
    }
}

/// Serves `router` within `limits` where `listen` says until SIGINT or
/// SIGTERM, or until `until` completes (an idle timeout); then lets the
/// requests in flight finish (5 s at most), runs `stopped` (a network
/// saves its state there), removes the port file and returns `Ok(true)`.
/// Once connections are accepted, `announce` is told the address (an error
/// from it stops the server before it serves) and the port is written to
/// the port file: `Ok(false)` at once if that exists (another server owns
/// it).
///
/// ```no_run
/// # fn serve(network: ic_http::Network) -> std::io::Result<bool> {
/// let limits = ic_http::RequestLimits::new(5 << 20);
/// let announce = |address| Ok(println!("listening on {address}"));
/// let listen = ic_http::Listen::local(4943);
/// ic_http::serve_forever(ic_http::router(network), limits, listen, std::future::pending(), announce, || {})
/// # }
/// ```
pub fn serve_forever(
    router: Router,
    limits: RequestLimits,
    listen: Listen,
    until: impl Future<Output = ()> + Send + 'static,
    announce: impl FnOnce(std::net::SocketAddr) -> std::io::Result<()>,
    stopped: impl FnOnce(),
) -> std::io::Result<bool> {
    use std::io::Write;
    let Listen { ip, port, port_file } = listen;
    let port_file_path = port_file;
    let port_file = match port_file {
        Some(path) => match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(file) => Some(file),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(e),
        },
        None => None,
    };
    let runtime = tokio::runtime::Runtime::new()?;
    let started = runtime.block_on(async {
        // Before anyone can see the port file: a signal sent as soon as
        // it appears (icp-cli stops its launcher so) stops the server
        // cleanly instead of killing it with its files left behind.
        let interrupted = catch_interrupts()?;
        let listener = tokio::net::TcpListener::bind((ip, port))
            .await
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {ip}:{port}: {e}")))?;
        let address = listener.local_addr()?;
        announce(address)?;
        if let Some(mut file) = port_file {
            writeln!(file, "{}", address.port())?;
            file.flush()?;
        }
        Ok((listener, interrupted))
    });
    let (listener, interrupted) = match started {
        Ok(started) => started,
        Err(e) => {
            // The file says a server owns the port: none does.
            if let Some(path) = port_file_path {
                let _ = std::fs::remove_file(path);
            }
            return Err(e);
        }
    };
    let stop = async move {
        tokio::select! {
            () = interrupted => {}
            () = until => {}
        }
    };
    let served = runtime.block_on(serve(listener, router, limits, stop));
    // Blocking work still running (a canister's long execution) does not
    // hold the process past the grace.
    runtime.shutdown_timeout(GRACE);
    served?;
    stopped();
    if let Some(path) = port_file_path {
        let _ = std::fs::remove_file(path);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::{get, post};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    /// A server of `/echo` (a POST's body back) and `/ok`, within `limits`;
    /// its address.
    async fn server(limits: RequestLimits) -> std::net::SocketAddr {
        let router = Router::new()
            .route("/echo", post(|body: axum::body::Bytes| async move { body }))
            .route("/ok", get(|| async { "ok" }));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, router, limits, std::future::pending()));
        address
    }

    fn limits() -> RequestLimits {
        RequestLimits { body_timeout: Duration::from_secs(2), ..RequestLimits::new(5 << 20) }
    }

    /// A POST to `/echo` declaring `length` bytes and sending `sent` of them.
    async fn stalled(address: std::net::SocketAddr, length: u64, sent: usize) -> std::io::Result<TcpStream> {
        let mut stream = TcpStream::connect(address).await?;
        let head = format!("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n");
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(&vec![7; sent]).await?;
        Ok(stream)
    }

    /// The status and body of the answer on `stream` (the connection closes after it).
    async fn answer(stream: &mut TcpStream) -> (u16, String) {
        let mut bytes = vec![];
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            let mut buffer = [0; 4096];
            loop {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => bytes.extend_from_slice(&buffer[..n]),
                }
                if String::from_utf8_lossy(&bytes).contains("\r\n\r\n") && bytes.ends_with(b".") {
                    break;
                }
            }
        });
        read.await.expect("an answer within 10 s");
        let text = String::from_utf8_lossy(&bytes).to_string();
        let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
        (status, text.split("\r\n\r\n").nth(1).unwrap_or("").to_string())
    }

    async fn ok(address: std::net::SocketAddr) -> u16 {
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream.write_all(b"GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).await.unwrap();
        text[9..12].parse().unwrap()
    }

    fn resident_bytes() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() << 10
    }

    #[tokio::test]
    async fn limits_of_zero_are_refused_and_the_largest_are_taken() {
        let listener = || async { TcpListener::bind("127.0.0.1:0").await.unwrap() };
        for zero in
            [RequestLimits { max_connections: 0, ..limits() }, RequestLimits { max_requests: 0, ..limits() }]
        {
            let refused = serve(listener().await, Router::new(), zero, std::future::ready(())).await;
            assert_eq!(refused.unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
        }
        let largest = RequestLimits {
            max_connections: usize::MAX,
            max_requests: usize::MAX,
            max_body_bytes_in_flight: usize::MAX,
            ..limits()
        };
        assert!(serve(listener().await, Router::new(), largest, std::future::ready(())).await.is_ok());
    }

    #[tokio::test]
    async fn a_body_declared_over_the_limit_is_refused_before_it_arrives() {
        let address = server(limits()).await;
        let mut stream = stalled(address, 10 << 30, 0).await.unwrap();
        let (status, text) = answer(&mut stream).await;
        assert_eq!(status, 413, "{text}");
        assert!(text.contains("10737418240 bytes, more than the 5242880"), "{text}");
        assert_eq!(ok(address).await, 200, "the server keeps serving");
    }

    #[tokio::test]
    async fn a_client_that_sends_a_body_over_the_limit_reads_the_413() {
        let address = server(limits()).await;
        let length = (5 << 20) + 1;
        let mut stream = stalled(address, length, length as usize).await.expect("the whole body is taken");
        let (status, text) = answer(&mut stream).await;
        assert_eq!(status, 413, "{text}");
        assert!(text.contains("5242881 bytes, more than the 5242880"), "{text}");
        assert_eq!(ok(address).await, 200, "the server keeps serving");
    }

    #[tokio::test]
    async fn a_body_that_does_not_arrive_in_time_gets_408() {
        let address = server(limits()).await;
        let mut stream = stalled(address, 100, 10).await.unwrap();
        let (status, text) = answer(&mut stream).await;
        assert_eq!((status, text.as_str()), (408, "The request's body did not arrive within 2 s."));
    }

    #[tokio::test]
    async fn headers_that_do_not_arrive_in_time_close_the_connection() {
        let address = server(RequestLimits { header_timeout: Duration::from_secs(1), ..limits() }).await;
        // Half a request's headers, nothing at all, the start of HTTP/2's preface.
        for sent in [&b"POST /echo HTTP/1.1\r\nHost: x\r\n"[..], b"", b"PRI"] {
            let mut stream = TcpStream::connect(address).await.unwrap();
            stream.write_all(sent).await.unwrap();
            let started = std::time::Instant::now();
            let mut rest = vec![];
            let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
            assert!(read.is_ok(), "the server closes the connection ({sent:?})");
            assert!(started.elapsed() >= Duration::from_millis(900), "not before the timeout ({sent:?})");
        }
    }

    #[tokio::test]
    async fn past_the_connections_at_once_a_connection_waits_for_a_slot() {
        let address = server(RequestLimits { max_connections: 2, ..limits() }).await;
        let mut open =
            [TcpStream::connect(address).await.unwrap(), TcpStream::connect(address).await.unwrap()];
        let mut third = TcpStream::connect(address).await.unwrap();
        third.write_all(b"GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
        let mut answer = String::new();
        let waiting =
            tokio::time::timeout(Duration::from_millis(500), third.read_to_string(&mut answer)).await;
        assert!(waiting.is_err(), "no answer while two connections are open: {answer}");
        open[0].shutdown().await.unwrap();
        drop(open);
        tokio::time::timeout(Duration::from_secs(5), third.read_to_string(&mut answer))
            .await
            .unwrap()
            .unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }

    #[tokio::test]
    async fn past_the_requests_at_once_a_request_gets_503() {
        let address = server(RequestLimits { max_requests: 2, ..limits() }).await;
        let _held = [stalled(address, 100, 1).await.unwrap(), stalled(address, 100, 1).await.unwrap()];
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut third = stalled(address, 3, 3).await.unwrap();
        let (status, text) = answer(&mut third).await;
        assert_eq!(status, 503, "{text}");
        assert!(text.contains("serving 2 requests at once, its limit"), "{text}");
    }

    /// 2,000 connections (fewer if the file limit is lower) each start a
    /// 5 MiB body and stall: the server holds at most its budget of bodies
    /// (64 MiB here) and a little per connection, refuses the rest at
    /// once, and answers another request meanwhile.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stalled_bodies_hold_no_more_memory_than_the_budget() {
        const BUDGET: usize = 64 << 20;
        let address = server(RequestLimits {
            max_requests: 10_000,
            max_body_bytes_in_flight: BUDGET,
            body_timeout: Duration::from_secs(30),
            ..limits()
        })
        .await;
        let files = rlimit_files();
        let connections = 2000.min(files.saturating_sub(100) / 2);
        let before = resident_bytes();
        let mut streams = vec![];
        for _ in 0..connections {
            if let Ok(stream) = stalled(address, (5 << 20) - 1, 64 << 10).await {
                streams.push(stream);
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(ok(address).await, 200, "a request is answered meanwhile");
        let grown = resident_bytes().saturating_sub(before);
        // The budget, and 16 KiB per connection (each side's buffers).
        let bound = BUDGET as u64 + 16_384 * streams.len() as u64;
        eprintln!("{grown} bytes more resident with {} stalled bodies", streams.len());
        assert!(
            grown < bound,
            "{grown} bytes more resident with {} stalled bodies; bound {bound}",
            streams.len()
        );
        let mut refused = 0;
        for stream in streams.iter_mut().rev().take(100) {
            refused += usize::from(answer(stream).await.0 == 503);
        }
        assert_eq!(refused, 100, "past the budget, a body is refused at once");
        assert!(connections >= 500, "the file limit ({files}) leaves too few connections to test");
    }

    fn rlimit_files() -> usize {
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
        let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap();
        line.split_whitespace().nth(3).unwrap().parse().unwrap()
    }
}
