//! The link against a scripted LangGraph server (axum on a local port): what a connect
//! reads and in which order, where a race with the server decides what is shown.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

use super::*;

/// A thread whose only run ends the moment the bridge lists the thread's runs: it is
/// not in the list, and from then on the state holds the interrupt it raised.
#[derive(Default)]
struct EndsWhileListed {
    ended: AtomicBool,
}

async fn serve(fake: Arc<EndsWhileListed>) -> String {
    let app = Router::new()
        .route("/threads", post(|| async { Json(json!({})) }))
        .route(
            "/threads/{id}/runs",
            get(|State(fake): State<Arc<EndsWhileListed>>| async move {
                fake.ended.store(true, Ordering::SeqCst);
                Json(json!([]))
            }),
        )
        .route(
            "/threads/{id}/state",
            get(|State(fake): State<Arc<EndsWhileListed>>| async move {
                let interrupts = if fake.ended.load(Ordering::SeqCst) {
                    json!([{"id": "pc1", "value": {"type": "tool_approval", "tool_call_id": "call_1", "name": "execute_trade", "args": {"symbol": "VNM"}}}])
                } else {
                    json!([])
                };
                Json(json!({"values": {"messages": []}, "interrupts": interrupts}))
            }),
        )
        .with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

#[tokio::test]
async fn a_run_that_ends_while_the_bridge_connects_still_has_its_request_shown() {
    let fake = Arc::new(EndsWhileListed::default());
    let url = serve(fake.clone()).await;
    let transport = LangGraphTransport::new(LangGraphSettings { url, ..LangGraphSettings::default() }, TimeoutDefaults::default());
    let mut link = transport.connect("s1").await.expect("connect");
    assert!(fake.ended.load(Ordering::SeqCst), "the connect listed the runs");
    // As the session's pump does: a restored turn is resumed before anything is read.
    assert_eq!(link.resume_turn().await.expect("resume"), Vec::new(), "the turn goes on: it waits for the request, it did not end");
    let mut translator = transport.new_state();
    let received = tokio::time::timeout(Duration::from_secs(5), link.recv(&mut translator)).await.expect("something to show").expect("open").expect("read");
    let keys: Vec<&str> = received
        .updates
        .iter()
        .filter_map(|update| match update {
            SessionUpdate::Request(request) => Some(request.approval_key.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(keys, ["pc1"], "the interrupt raised as the run ended is shown: {:?}", received.updates);
}
