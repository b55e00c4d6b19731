//! Hostile-client benchmark: the release binary as a child process, its HTTP listener
//! under the two floods issue #23 measured. Figures are printed with their targets,
//! never asserted (tests/listeners.rs asserts the behaviour).
//!
//! - 1,000 parallel unauthenticated 1 MiB POSTs to `/v1/requests`: how much the
//!   bridge's peak RSS (VmHWM) grows. Target: under 32 MiB.
//! - 1,100 idle connections held open: how long `/healthz` takes on a new
//!   connection. Target: under 1 s. Run twice: with systemd's default limits (soft
//!   1,024 open files, which the bridge raises to the hard limit) and with a hard
//!   limit of 1,024 (the connection cap, not the limit, keeps it answering).
//!
//! - MCP sessions (issue #31): memory per abandoned session and after idle expiry,
//!   the per-token cap, 200 calls whose clients vanish (half RST, half FIN), and 64
//!   authenticated 5 MiB uploads to `/mcp`.
//! - A crowd of 1,000 strangers writing at once on Telegram (rate limits on): how long
//!   a new approval card takes to be sent meanwhile. Target: under 1 s.
//!
//! `cargo bench --bench listeners` (`LISTENERS_ONLY=mcp,crowd,flood,idle` runs a subset)

#[path = "../tests/support/mod.rs"]
mod support;

use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKEN: &str = "bench:bench-secret"; // name:SECRET
const FLOOD: usize = 1_000;
const IDLE: usize = 1_100;

struct Bridge {
    process: std::process::Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Bridge {
    /// The release binary with the default config, a fresh SQLite store and the inbound
    /// API on, its open-files limit set to (`soft`, `hard`) before it starts.
    async fn start(soft: u64, hard: u64) -> Bridge {
        Self::start_with(soft, hard, &[]).await
    }

    /// [`Bridge::start`] with more settings, as `HITL_BRIDGE__` variables (`("MCP__MAX_SESSIONS", "10")`).
    async fn start_with(soft: u64, hard: u64, settings: &[(&str, String)]) -> Bridge {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
        let addr = format!("127.0.0.1:{port}");
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_hitl-bridge"));
        command
            .args(["run", "--config", concat!(env!("CARGO_MANIFEST_DIR"), "/config/default.toml")])
            .env("HITL_BRIDGE__STORE__URL", format!("sqlite://{}/bridge.db", dir.path().display()))
            .env("HITL_BRIDGE__HTTP__LISTEN", &addr)
            .env("HITL_BRIDGE__HTTP__API_TOKENS", TOKEN)
            .env("HITL_BRIDGE__CONSOLE__ENABLED", "false")
            .envs(settings.iter().map(|(k, v)| (format!("HITL_BRIDGE__{k}"), v.clone())))
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only async-signal-safe setrlimit between fork and exec.
        unsafe {
            command.pre_exec(move || {
                let limit = libc::rlimit { rlim_cur: soft as libc::rlim_t, rlim_max: hard as libc::rlim_t };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let process = command.spawn().expect("start the bridge binary (is the hard open-files limit this high?)");
        let bridge = Bridge { process, addr, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(60);
        while healthz(&bridge.addr).await.is_none() {
            assert!(Instant::now() < deadline, "the bridge never answered /healthz");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        bridge
    }

    /// (VmHWM, VmRSS) in MiB.
    fn memory(&self) -> (f64, f64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.process.id())).unwrap_or_default();
        let field = |name: &str| {
            status.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1)).and_then(|kb| kb.parse::<f64>().ok()).unwrap_or(0.0) / 1024.0
        };
        (field("VmHWM:"), field("VmRSS:"))
    }

    fn open_files(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.process.id())).map(|d| d.count()).unwrap_or(0)
    }

    fn stop(mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// `/healthz` on a new connection: how long the answer took, `None` without one.
async fn healthz(addr: &str) -> Option<Duration> {
    let started = Instant::now();
    let attempt = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: bridge\r\nConnection: close\r\n\r\n").await.ok()?;
        let mut got = Vec::new();
        stream.read_to_end(&mut got).await.ok()?;
        got.starts_with(b"HTTP/1.1 200").then_some(())
    };
    tokio::time::timeout(Duration::from_secs(5), attempt).await.ok().flatten().map(|()| started.elapsed())
}

/// One POST to `path` announcing (and trying to send) `body`, with a bearer `token`
/// or none: the status code that came back, or what happened instead.
async fn post_announcing(addr: String, path: &'static str, token: Option<&'static str>, body: std::sync::Arc<Vec<u8>>) -> &'static str {
    let Ok(mut stream) = TcpStream::connect(&addr).await else { return "connect failed" };
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let head = format!("POST {path} HTTP/1.1\r\nHost: bridge\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len());
    if stream.write_all(head.as_bytes()).await.is_err() {
        return "closed";
    }
    // The body is written while the answer is read: a bridge that refuses from the
    // headers answers (and may hang up) before the body is through.
    let (mut read, mut write) = stream.into_split();
    let writer = tokio::spawn(async move {
        let _ = write.write_all(&body).await;
    });
    let mut first = [0u8; 12];
    let answer = match tokio::time::timeout(Duration::from_secs(30), read.read_exact(&mut first)).await {
        Ok(Ok(_)) if &first == b"HTTP/1.1 401" => "401",
        Ok(Ok(_)) if &first == b"HTTP/1.1 413" => "413",
        Ok(Ok(_)) => "other",
        Ok(Err(_)) => "closed",
        Err(_) => "no answer in 30 s",
    };
    writer.abort();
    answer
}

async fn flood_of_unauthenticated_posts() {
    println!("\n## {FLOOD} parallel unauthenticated 1 MiB POSTs to /v1/requests");
    let bridge = Bridge::start(own_hard_limit(), own_hard_limit()).await;
    raise_own_limit();
    let (before, _) = bridge.memory();
    let body = std::sync::Arc::new(vec![b'x'; 1 << 20]);
    let started = Instant::now();
    let posts: Vec<_> = (0..FLOOD).map(|_| tokio::spawn(post_announcing(bridge.addr.clone(), "/v1/requests", None, body.clone()))).collect();
    let mut outcomes = std::collections::BTreeMap::<&str, usize>::new();
    for post in posts {
        *outcomes.entry(post.await.unwrap_or("panicked")).or_default() += 1;
    }
    let took = started.elapsed();
    let (peak, now) = bridge.memory();
    println!("  answers: {outcomes:?} in {took:.2?}");
    println!("  peak RSS {before:.1} → {peak:.1} MiB: +{:.1} MiB (target < 32 MiB); RSS after {now:.1} MiB", peak - before);
    bridge.stop();
}

async fn healthz_behind_idle_connections(soft: u64, hard: u64) {
    println!("\n## /healthz with {IDLE} idle connections open (bridge's open-files limit: soft {soft}, hard {hard})");
    let bridge = Bridge::start(soft, hard).await;
    raise_own_limit();
    let mut idle = Vec::with_capacity(IDLE);
    for _ in 0..IDLE {
        match TcpStream::connect(&bridge.addr).await {
            Ok(stream) => idle.push(stream),
            Err(e) => {
                println!("  connect failed after {} connections: {e}", idle.len());
                break;
            }
        }
    }
    let mut samples = Vec::new();
    let mut failed = 0;
    for _ in 0..20 {
        match healthz(&bridge.addr).await {
            Some(took) => samples.push(took),
            None => failed += 1,
        }
    }
    samples.sort();
    let p50 = samples.get(samples.len() / 2).copied().unwrap_or_default();
    let max = samples.last().copied().unwrap_or_default();
    println!(
        "  {} idle connections opened; /healthz answered {} of 20: p50 {p50:.2?}, max {max:.2?} (target < 1 s), {failed} unanswered",
        idle.len(),
        samples.len()
    );
    drop(idle);
    bridge.stop();
}

fn own_hard_limit() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: a plain read into the struct passed in.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    // rlim_t is u64 on Linux, not on every Unix.
    #[allow(clippy::unnecessary_cast)]
    let hard = limit.rlim_max as u64;
    hard
}

/// The benchmark itself holds over a thousand sockets.
fn raise_own_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain reads and writes of the struct passed in.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

// ---------------------------------------------------------------------------------
// MCP

const SECRET: &str = "bench-secret";

fn mcp_post(http: &reqwest::Client, base: &str, session: Option<&str>, message: &serde_json::Value) -> reqwest::RequestBuilder {
    let mut request = http
        .post(format!("{base}/mcp"))
        .bearer_auth(SECRET)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(message.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-06-18");
    }
    request
}

/// Opens a session (initialize, initialized): its id, or the refusal's status.
async fn mcp_open(http: &reqwest::Client, base: &str) -> Result<String, u16> {
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
    let response = mcp_post(http, base, None, &initialize).send().await.map_err(|_| 0u16)?;
    let status = response.status().as_u16();
    let id = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let _ = response.bytes().await;
    let id = id.filter(|_| status == 200).ok_or(status)?;
    let _ = mcp_post(http, base, Some(&id), &serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).send().await;
    Ok(id)
}

/// Opens `n` sessions, 32 at a time: the ids opened and the refusals by status.
async fn open_many(base: &str, n: usize) -> (Vec<String>, std::collections::BTreeMap<u16, usize>) {
    let http = reqwest::Client::new();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..32)
        .map(|_| {
            let (http, base, next) = (http.clone(), base.to_owned(), next.clone());
            tokio::spawn(async move {
                let mut got = (Vec::new(), Vec::new());
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < n {
                    match mcp_open(&http, &base).await {
                        Ok(id) => got.0.push(id),
                        Err(status) => got.1.push(status),
                    }
                }
                got
            })
        })
        .collect();
    let (mut ids, mut refused) = (Vec::new(), std::collections::BTreeMap::new());
    for worker in workers {
        let (opened, refusals) = worker.await.expect("worker");
        ids.extend(opened);
        for status in refusals {
            *refused.entry(status).or_default() += 1;
        }
    }
    (ids, refused)
}

async fn mcp_session_memory() {
    const WAVE: usize = 2_000;
    println!("\n## MCP: {WAVE} sessions opened and abandoned, twice (caps raised, mcp.session_idle_secs = 5)");
    let hard = own_hard_limit();
    raise_own_limit();
    let raised = [("MCP__MAX_SESSIONS", "100000".to_owned()), ("MCP__MAX_SESSIONS_PER_TOKEN", "100000".to_owned()), ("MCP__SESSION_IDLE_SECS", "5".to_owned())];
    let bridge = Bridge::start_with(hard, hard, &raised).await;
    let base = format!("http://{}", bridge.addr);
    let (_, baseline) = bridge.memory();
    println!("  RSS at start {baseline:.1} MiB");
    for wave in 1..=2 {
        let started = Instant::now();
        let (ids, refused) = open_many(&base, WAVE).await;
        let (_, open) = bridge.memory();
        println!(
            "  wave {wave}: {} opened in {:.2?} (refused: {refused:?}); RSS {open:.1} MiB, +{:.1} MiB over the start ({:.0} KiB a session)",
            ids.len(),
            started.elapsed(),
            open - baseline,
            (open - baseline) * 1024.0 / ids.len().max(1) as f64
        );
        // Untouched (a request would keep its session alive) for the idle time and
        // two sweeps (every 1.25 s), then every one of them is unknown.
        tokio::time::sleep(Duration::from_secs(8)).await;
        let (_, after) = bridge.memory();
        let http = reqwest::Client::new();
        let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let mut gone = 0;
        for id in ids.iter().step_by(100) {
            gone += usize::from(mcp_post(&http, &base, Some(id), &list).send().await.map(|r| r.status().as_u16()).unwrap_or(0) == 404);
        }
        println!(
            "  wave {wave}, 8 s later: {gone} of {} sampled sessions gone; RSS {after:.1} MiB, +{:.1} MiB over the start (target: near the start)",
            ids.len().div_ceil(100),
            after - baseline
        );
    }
    bridge.stop();
}

async fn mcp_session_cap() {
    const TRIES: usize = 2_000;
    println!("\n## MCP: one token tries {TRIES} sessions (default caps: 32 per token, 512 in all)");
    let bridge = Bridge::start(own_hard_limit(), own_hard_limit()).await;
    let base = format!("http://{}", bridge.addr);
    let (_, baseline) = bridge.memory();
    let started = Instant::now();
    let (ids, refused) = open_many(&base, TRIES).await;
    let (_, open) = bridge.memory();
    println!("  {} opened, refused {refused:?} in {:.2?}; RSS +{:.1} MiB", ids.len(), started.elapsed(), open - baseline);
    bridge.stop();
}

/// One `tools/call` on its own connection, written by hand so the client can vanish
/// with a FIN or an RST: the socket, once the call's stream has begun.
async fn call_on_own_socket(addr: &str, session: &str, key: &str) -> TcpStream {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "request_approval",
        "arguments": {"actions": [{"name": "deploy"}], "approval_key": key, "targets": ["telegram:-100777"]}}})
    .to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: bridge\r\nAuthorization: Bearer {SECRET}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(head.as_bytes()).await.expect("send the call");
    let mut first = [0u8; 12];
    stream.read_exact(&mut first).await.expect("the call's answer begins");
    stream
}

async fn abandoned_calls() {
    const CALLS: usize = 200;
    println!("\n## MCP: {CALLS} waiting calls whose clients vanish (half RST, half FIN)");
    let tg = support::fake_telegram::FakeTelegram::start().await;
    tg.group(-100_777, "ops", false);
    let hard = own_hard_limit();
    raise_own_limit();
    let settings = [
        ("MCP__MAX_SESSIONS_PER_TOKEN", "1000".to_owned()),
        ("MCP__MAX_SESSIONS", "1000".to_owned()),
        ("TELEGRAM__ENABLED", "true".to_owned()),
        ("TELEGRAM__TOKEN", support::fake_telegram::TOKEN.to_owned()),
        ("TELEGRAM__API_URL", tg.url.clone()),
        ("TELEGRAM__RATE_LIMITS", "false".to_owned()),
    ];
    let bridge = Bridge::start_with(hard, hard, &settings).await;
    let base = format!("http://{}", bridge.addr);
    let fds_idle = bridge.open_files();
    let (ids, _) = open_many(&base, CALLS).await;
    let mut sockets = Vec::new();
    for (n, id) in ids.iter().enumerate() {
        sockets.push(call_on_own_socket(&bridge.addr, id, &format!("gone-{n}")).await);
    }
    while tg.bot_messages(-100_777).len() < CALLS {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let fds_held = bridge.open_files();
    let left = Instant::now();
    for (n, socket) in sockets.into_iter().enumerate() {
        if n % 2 == 0 {
            // Linger 0 makes the drop an RST at once (it is a non-zero linger that blocks).
            #[allow(deprecated)]
            let _ = socket.set_linger(Some(Duration::ZERO));
        }
        drop(socket);
    }
    let http = reqwest::Client::new();
    let mut cancelled = 0;
    let mut all_in = None;
    while left.elapsed() < Duration::from_secs(30) {
        cancelled = 0;
        for n in 0..CALLS {
            let state: serde_json::Value = match http.get(format!("{base}/v1/requests/gone-{n}")).bearer_auth(SECRET).send().await {
                Ok(r) => r.json().await.unwrap_or_default(),
                Err(_) => serde_json::Value::Null,
            };
            cancelled += usize::from(state["status"] == "cancelled");
        }
        if cancelled == CALLS {
            all_in = Some(left.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    match all_in {
        Some(took) => println!("  all {CALLS} requests cancelled {took:.1?} after their clients left (target: a few seconds)"),
        None => println!("  {cancelled} of {CALLS} requests cancelled 30 s after their clients left"),
    }
    let fds_after = bridge.open_files();
    // The tools' own long-polls to /v1 on loopback sit idle in the pool (both ends are
    // this process) until the listener closes idle keep-alive connections.
    tokio::time::sleep(Duration::from_secs(12)).await;
    println!("  open files: {fds_idle} idle, {fds_held} while the calls waited, {fds_after} 2 s after, {} 14 s after", bridge.open_files());
    bridge.stop();
}

async fn big_mcp_uploads() {
    const UPLOADS: usize = 64;
    println!("\n## MCP: {UPLOADS} authenticated 5 MiB uploads to /mcp in parallel");
    let bridge = Bridge::start(own_hard_limit(), own_hard_limit()).await;
    let (before, _) = bridge.memory();
    let body = std::sync::Arc::new(vec![b' '; 5 << 20]);
    let posts: Vec<_> = (0..UPLOADS).map(|_| tokio::spawn(post_announcing(bridge.addr.clone(), "/mcp", Some(SECRET), body.clone()))).collect();
    let mut outcomes = std::collections::BTreeMap::<&str, usize>::new();
    for post in posts {
        *outcomes.entry(post.await.unwrap_or("panicked")).or_default() += 1;
    }
    let (peak, _) = bridge.memory();
    println!("  answers: {outcomes:?}; peak RSS {before:.1} → {peak:.1} MiB: +{:.1} MiB", peak - before);
    bridge.stop();
}

// ---------------------------------------------------------------------------------
// A crowd of strangers

async fn card_behind_a_crowd() {
    const CROWD: i64 = 1_000;
    const OPS: i64 = -100_900;
    println!("\n## A new approval card while {CROWD} strangers are each owed a refusal (Telegram rate limits on)");
    let tg = support::fake_telegram::FakeTelegram::start().await;
    tg.group(OPS, "ops", false);
    let settings =
        [("TELEGRAM__ENABLED", "true".to_owned()), ("TELEGRAM__TOKEN", support::fake_telegram::TOKEN.to_owned()), ("TELEGRAM__API_URL", tg.url.clone())];
    let bridge = Bridge::start_with(own_hard_limit(), own_hard_limit(), &settings).await;
    let base = format!("http://{}", bridge.addr);
    for n in 0..CROWD {
        let stranger = support::fake_telegram::User::new(5_000_000 + n, "Stranger", Some("en"));
        let chat = tg.private_chat(&stranger);
        tg.push_message(chat, &stranger, "hello", None, None);
    }
    let refusals = || (0..CROWD).filter(|n| !tg.bot_messages(5_000_000 + n).is_empty()).count();
    // The bridge is busy refusing: the overall quota (30 a second) is what holds sends back.
    let crowd_came = Instant::now();
    while refusals() < 60 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("  the first 60 refusals took {:.1?}", crowd_came.elapsed());
    let http = reqwest::Client::new();
    let mut samples = Vec::new();
    for round in 0..3 {
        let pushed = Instant::now();
        let body = serde_json::json!({"approval_key": format!("crowd-{round}"), "targets": [{"platform": "telegram", "chat_id": OPS.to_string()}],
            "actions": [{"name": "deploy"}]});
        let response = http.post(format!("{base}/v1/requests")).bearer_auth(SECRET).json(&body).send().await.expect("push");
        assert!(response.status().is_success(), "push: {}", response.status());
        while tg.bot_messages(OPS).len() <= round {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        samples.push(pushed.elapsed());
        println!("  card {} sent {:.0?} after the push, with {} of {CROWD} refusals sent", round + 1, pushed.elapsed(), refusals());
    }
    let worst = samples.iter().max().copied().unwrap_or_default();
    println!("  slowest card {worst:.0?} (target < 1 s)");
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!("  5 s later: {} of {CROWD} refusals sent (the crowd drains at the overall quota)", refusals());
    bridge.stop();
    tg.shutdown();
}

fn runs(phase: &str) -> bool {
    std::env::var("LISTENERS_ONLY").map_or(true, |only| only.split(',').any(|p| p.trim() == phase))
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        // `cargo test --benches` asks for a listing; there is nothing to list.
        return;
    }
    if runs("flood") {
        flood_of_unauthenticated_posts().await;
    }
    if runs("idle") {
        let hard = own_hard_limit();
        healthz_behind_idle_connections(1_024, hard).await;
        healthz_behind_idle_connections(1_024, 1_024).await;
    }
    if runs("mcp") {
        mcp_session_memory().await;
        mcp_session_cap().await;
        abandoned_calls().await;
        big_mcp_uploads().await;
    }
    if runs("crowd") {
        card_behind_a_crowd().await;
    }
}
