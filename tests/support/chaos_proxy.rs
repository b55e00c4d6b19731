//! A TCP proxy between the bridge and the agent that can freeze its connections: a
//! frozen connection stays open on both sides but carries nothing in either
//! direction (what the bridge writes is dropped, nothing comes back), which is what a
//! half-open connection looks like from the bridge. New connections are not frozen.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct ChaosProxy {
    pub addr: SocketAddr,
    connections: Arc<Mutex<Vec<Arc<AtomicBool>>>>,
}

impl ChaosProxy {
    pub async fn start(upstream: SocketAddr) -> ChaosProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().unwrap();
        let connections: Arc<Mutex<Vec<Arc<AtomicBool>>>> = Arc::default();
        let registry = connections.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream).await else { continue };
                let frozen = Arc::new(AtomicBool::new(false));
                registry.lock().unwrap().push(frozen.clone());
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pipe(client_read, server_write, frozen.clone()));
                tokio::spawn(pipe(server_read, client_write, frozen));
            }
        });
        ChaosProxy { addr, connections }
    }

    /// Freezes every connection open now; returns how many.
    pub fn freeze_all(&self) -> usize {
        let connections = self.connections.lock().unwrap();
        for frozen in connections.iter() {
            frozen.store(true, Ordering::SeqCst);
        }
        connections.len()
    }

    /// How many connections were opened through the proxy so far.
    pub fn connections(&self) -> usize {
        self.connections.lock().unwrap().len()
    }
}

async fn pipe(mut from: tokio::net::tcp::OwnedReadHalf, mut to: tokio::net::tcp::OwnedWriteHalf, frozen: Arc<AtomicBool>) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if frozen.load(Ordering::SeqCst) {
            continue; // swallowed: the other side never hears of it
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    // A frozen connection is never closed by the proxy: half-open is the point.
    if frozen.load(Ordering::SeqCst) {
        std::future::pending::<()>().await;
    }
}
