//! An HTTP proxy in front of a backend that can withhold the answers to one kind of
//! request: the request reaches the backend (which acts on it), but its answer, and
//! everything after it on that connection, never reaches the bridge. That is the
//! window a crash can fall into: the backend has a command the bridge has no proof of.
//!
//! For a WebSocket, whose frames cannot be told apart on the wire, the proxy can
//! instead pass only the handshake's answer of new connections and nothing after it
//! ([`WithholdingProxy::withhold_after_handshake`]).

// Each test binary uses the part it needs.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct WithholdingProxy {
    pub url: String,
    /// While set, a connection whose request line starts with this prefix is withheld.
    withhold: Arc<AtomicBool>,
    /// How many requests were withheld.
    withheld: Arc<AtomicUsize>,
    /// While set, new connections get the answer's head and nothing more.
    after_handshake: Arc<AtomicBool>,
}

impl WithholdingProxy {
    /// Proxies to `upstream` (`http://host:port`); withholds the answers to requests
    /// whose first line starts with `request_prefix` (e.g. `POST /threads/`) and
    /// contains `path_part` (e.g. `/runs/stream`), while [`Self::withhold`] is on.
    pub async fn start(upstream: &str, request_prefix: &'static str, path_part: &'static str) -> WithholdingProxy {
        let upstream: SocketAddr = upstream.trim_start_matches("http://").trim_end_matches('/').parse().expect("upstream host:port");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let withhold = Arc::new(AtomicBool::new(false));
        let withheld = Arc::new(AtomicUsize::new(0));
        let after_handshake = Arc::new(AtomicBool::new(false));
        let (flag, count, handshake) = (withhold.clone(), withheld.clone(), after_handshake.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream).await else { continue };
                let head_only = handshake.load(Ordering::SeqCst);
                tokio::spawn(pipe(client, server, flag.clone(), count.clone(), request_prefix, path_part, head_only));
            }
        });
        WithholdingProxy { url, withhold, withheld, after_handshake }
    }

    /// New connections get the head of the first answer (a WebSocket's `101`) and
    /// nothing after it, while on.
    pub fn withhold_after_handshake(&self, on: bool) {
        self.after_handshake.store(on, Ordering::SeqCst);
    }

    pub fn withhold(&self, on: bool) {
        self.withhold.store(on, Ordering::SeqCst);
    }

    pub fn withheld(&self) -> usize {
        self.withheld.load(Ordering::SeqCst)
    }
}

async fn pipe(client: TcpStream, server: TcpStream, withhold: Arc<AtomicBool>, withheld: Arc<AtomicUsize>, prefix: &str, part: &str, head_only: bool) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // Set once a withheld request went up this connection: from then on nothing comes back.
    let cut = Arc::new(AtomicBool::new(false));
    let cut_up = cut.clone();
    let (prefix, part) = (prefix.to_owned(), part.to_owned());
    let up = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let head = String::from_utf8_lossy(&buf[..n.min(512)]);
            let first_line = head.lines().next().unwrap_or_default();
            if withhold.load(Ordering::SeqCst) && first_line.starts_with(&prefix) && first_line.contains(&part) && !cut_up.swap(true, Ordering::SeqCst) {
                withheld.fetch_add(1, Ordering::SeqCst);
            }
            if server_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    let down = async move {
        let mut buf = vec![0u8; 64 * 1024];
        let mut head = Vec::new();
        loop {
            let n = match server_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut pass = &buf[..n];
            if head_only {
                if cut.load(Ordering::SeqCst) {
                    continue;
                }
                // Pass up to the end of the answer's head, then nothing.
                let before = head.len();
                head.extend_from_slice(pass);
                if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                    pass = &pass[..(end + 4).saturating_sub(before).min(n)];
                    cut.store(true, Ordering::SeqCst);
                }
            } else if cut.load(Ordering::SeqCst) {
                continue;
            }
            if client_write.write_all(pass).await.is_err() {
                break;
            }
        }
    };
    tokio::join!(up, down);
}
