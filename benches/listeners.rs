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
//! `cargo bench --bench listeners`

use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKEN: &str = "bench:bench-secret";
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

/// One unauthenticated POST announcing (and trying to send) 1 MiB: what came back.
async fn unauthenticated_post(addr: String, body: std::sync::Arc<Vec<u8>>) -> &'static str {
    let Ok(mut stream) = TcpStream::connect(&addr).await else { return "connect failed" };
    let head = format!("POST /v1/requests HTTP/1.1\r\nHost: bridge\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len());
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
    let posts: Vec<_> = (0..FLOOD).map(|_| tokio::spawn(unauthenticated_post(bridge.addr.clone(), body.clone()))).collect();
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

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        // `cargo test --benches` asks for a listing; there is nothing to list.
        return;
    }
    flood_of_unauthenticated_posts().await;
    let hard = own_hard_limit();
    healthz_behind_idle_connections(1_024, hard).await;
    healthz_behind_idle_connections(1_024, 1_024).await;
}
