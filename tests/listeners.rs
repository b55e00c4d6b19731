//! What a hostile or sloppy client can do to the bridge's listeners: hoard idle
//! connections, send headers or a body slowly, or POST large bodies without a token.
//! Each case is driven over raw TCP, so the test sees exactly when the bridge answers
//! or hangs up, with no client library buffering in between.

mod support;
use support::{Chat, Harness};

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::{get, post};
use hitl_bridge::listener::{self, Limits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What a client that sends `head` (and nothing after it) reads back within `within`:
/// the status line, or `None` when the bridge hung up without answering.
/// Panics when nothing happened in time: the bridge waited for bytes it should not
/// need.
async fn answer_to(addr: SocketAddr, head: &str, within: Duration) -> Option<String> {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("write");
    let mut got = Vec::new();
    let read = tokio::time::timeout(within, async {
        let mut buf = [0u8; 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    got.extend_from_slice(&buf[..n]);
                    if got.windows(2).any(|w| w == b"\r\n") {
                        break;
                    }
                }
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer and no hang-up within {within:?} to {head:?}");
    let text = String::from_utf8_lossy(&got);
    text.lines().next().filter(|l| !l.is_empty()).map(str::to_owned)
}

/// A listener on a free port serving a tiny app within `limits`.
async fn tiny_listener(limits: Limits) -> SocketAddr {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/echo", post(|body: axum::body::Bytes| async move { format!("{} bytes", body.len()) }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        );
    let socket = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = socket.local_addr().expect("addr");
    tokio::spawn(listener::serve(socket, app, limits));
    addr
}

fn limits(max_connections: usize) -> Limits {
    Limits { max_connections, header_read_timeout: Duration::from_secs(1), body_read_timeout: Duration::from_secs(1), max_body_bytes: 1 << 20 }
}

const HEALTHZ: &str = "GET /healthz HTTP/1.1\r\nHost: bridge\r\n\r\n";

/// A client hoarding idle connections past the cap does not lock anyone out: the
/// longest-idle one is closed to make room, and /healthz answers at once.
#[tokio::test]
async fn idle_connections_past_the_cap_make_room_for_new_clients() {
    let addr = tiny_listener(Limits { header_read_timeout: Duration::from_secs(60), ..limits(8) }).await;
    let mut hoard = Vec::new();
    for _ in 0..40 {
        hoard.push(TcpStream::connect(addr).await.expect("connect"));
    }
    let started = Instant::now();
    assert_eq!(answer_to(addr, HEALTHZ, Duration::from_secs(2)).await.as_deref(), Some("HTTP/1.1 200 OK"));
    let took = started.elapsed();
    println!("/healthz behind 40 idle connections (cap 8): {took:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    // The hoarder lost its oldest connections: the first one reads end-of-stream.
    let mut first = hoard.remove(0);
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(2), first.read(&mut buf)).await.expect("closed, not left open");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
}

/// When every connection is busy with a request, a newcomer is closed at once rather
/// than queued behind them, and the busy requests are not cut.
#[tokio::test]
async fn at_the_cap_with_every_connection_busy_a_newcomer_is_closed() {
    let addr = tiny_listener(limits(2)).await;
    let mut busy = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream.write_all(b"GET /slow HTTP/1.1\r\nHost: bridge\r\n\r\n").await.expect("write");
        busy.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(answer_to(addr, HEALTHZ, Duration::from_secs(2)).await, None, "closed without an answer");
}

/// Headers sent slowly: the connection is closed after the header timeout.
#[tokio::test]
async fn headers_that_do_not_arrive_in_time_end_the_connection() {
    let addr = tiny_listener(limits(8)).await;
    let started = Instant::now();
    let answer = answer_to(addr, "GET /healthz HTTP/1.1\r\nHost: bri", Duration::from_secs(5)).await;
    let took = started.elapsed();
    // hyper answers 408 or hangs up; either way the client is gone after ~1 s.
    assert!(answer.is_none() || answer.as_deref() == Some("HTTP/1.1 408 Request Timeout"), "{answer:?}");
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(3), "{took:?}");
}

/// A body dribbled in: the request fails once the whole-body deadline passes, even
/// though bytes keep coming (the timeout is a total, not per chunk).
#[tokio::test]
async fn a_body_that_trickles_in_is_cut_off_at_the_deadline() {
    let addr = tiny_listener(limits(8)).await;
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(b"POST /echo HTTP/1.1\r\nHost: bridge\r\nContent-Length: 100\r\n\r\n").await.expect("write");
    let started = Instant::now();
    let dribble = tokio::spawn(async move {
        for _ in 0..40 {
            if stream.write_all(b"x").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut got = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(2), stream.read_to_end(&mut got)).await;
        String::from_utf8_lossy(&got).lines().next().unwrap_or_default().to_owned()
    });
    let status = dribble.await.expect("client");
    // axum reports a failed body read as 400; the 100 bytes never completed.
    assert!(status.starts_with("HTTP/1.1 4"), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A bridge with the inbound API on (token `ops:s3cret`) and the Telegram webhook,
/// against the fake Bot API.
async fn bridge(webhook_listen: &str) -> Harness {
    let url = format!("http://{webhook_listen}/telegram/hook");
    Harness::on(Chat::Telegram)
        .no_agent()
        .settings(&[
            ("telegram.mode", "webhook"),
            ("telegram.webhook_url", &url),
            ("telegram.webhook_listen", webhook_listen),
            ("telegram.webhook_secret", "hook-secret"),
        ])
        .tweak(|settings| settings.http.api_tokens = vec!["ops:s3cret".into()])
        .start()
        .await
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port()
}

/// The token is checked, and a declared length over 1 MiB refused, before a byte of
/// the body is read: a client that sends only the headers of a 1 MiB POST gets its
/// answer at once instead of the bridge waiting for (and buffering) the body.
#[tokio::test]
async fn the_api_and_the_webhook_refuse_before_reading_the_body() {
    let hook = format!("127.0.0.1:{}", free_port());
    let bridge = bridge(&hook).await;
    let api = bridge.app().http_addr().expect("http listener");
    let within = Duration::from_secs(2);
    let post = |auth: &str, length: usize| {
        format!("POST /v1/requests HTTP/1.1\r\nHost: bridge\r\n{auth}Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n")
    };

    let no_token = answer_to(api, &post("", 1 << 20), within).await;
    assert_eq!(no_token.as_deref(), Some("HTTP/1.1 401 Unauthorized"));
    let wrong_token = answer_to(api, &post("Authorization: Bearer guess\r\n", 1 << 20), within).await;
    assert_eq!(wrong_token.as_deref(), Some("HTTP/1.1 401 Unauthorized"));
    let too_long = answer_to(api, &post("Authorization: Bearer s3cret\r\n", (1 << 20) + 1), within).await;
    assert_eq!(too_long.as_deref(), Some("HTTP/1.1 413 Payload Too Large"));

    let hook_addr: SocketAddr = hook.parse().expect("addr");
    let webhook =
        |secret: &str| format!("POST /telegram/hook HTTP/1.1\r\nHost: bridge\r\n{secret}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n", 1 << 20);
    assert_eq!(answer_to(hook_addr, &webhook(""), within).await.as_deref(), Some("HTTP/1.1 401 Unauthorized"));
    let wrong = answer_to(hook_addr, &webhook("X-Telegram-Bot-Api-Secret-Token: guess\r\n"), within).await;
    assert_eq!(wrong.as_deref(), Some("HTTP/1.1 401 Unauthorized"));
    bridge.shutdown().await;
}
