//! End-to-end tests of the reference agent (`agent_sim`) over real sockets: a
//! tokio-tungstenite 0.21 client plays the bridge, reqwest reads the inspection routes.
//! Every wait is bounded (`WAIT`) and nothing asserts on elapsed time.

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use hitl_bridge::agent_sim::{self, SimHandle, SimOptions};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

const WAIT: Duration = Duration::from_secs(10);

async fn start(opts: SimOptions) -> SimHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    agent_sim::spawn(listener, opts).await.expect("spawn sim")
}

async fn start_default() -> SimHandle {
    start(SimOptions::default()).await
}

/// The bridge's side of one WebSocket connection.
struct Client {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    session: String,
}

async fn try_connect(addr: SocketAddr, session: &str, token: Option<&str>) -> Result<Client, WsError> {
    let mut request = format!("ws://{addr}/ws/{session}").into_client_request()?;
    if let Some(token) = token {
        let value = format!("Bearer {token}").parse().expect("header value");
        request.headers_mut().insert("authorization", value);
    }
    let (ws, _) = tokio_tungstenite::connect_async(request).await?;
    Ok(Client { ws, session: session.to_owned() })
}

async fn connect(addr: SocketAddr, session: &str) -> Client {
    try_connect(addr, session, None).await.expect("connect")
}

fn status_of(result: Result<Client, WsError>) -> u16 {
    match result {
        Err(WsError::Http(response)) => response.status().as_u16(),
        Err(other) => panic!("expected an HTTP error, got {other}"),
        Ok(_) => panic!("expected the upgrade to be refused"),
    }
}

impl Client {
    async fn send(&mut self, command: Value) {
        self.ws.send(Message::Text(command.to_string())).await.expect("send");
    }

    async fn say(&mut self, text: &str) {
        let session = self.session.clone();
        self.send(json!({
            "type": "message", "session_id": session,
            "content": [{"type": "text", "text": text}],
            "user": {"platform": "telegram", "id": "123456", "name": "Thảo"},
        }))
        .await;
    }

    async fn approve_with(&mut self, key: &str, body: Value) {
        let mut command = json!({"type": "approval", "session_id": self.session, "approval_key": key});
        for (k, v) in body.as_object().expect("object body") {
            command[k] = v.clone();
        }
        self.send(command).await;
    }

    /// The next frame of any kind (pings excluded).
    async fn next_frame(&mut self) -> Message {
        loop {
            let frame =
                tokio::time::timeout(WAIT, self.ws.next()).await.expect("timed out waiting for a frame").expect("connection ended").expect("read error");
            if !matches!(frame, Message::Ping(_) | Message::Pong(_)) {
                return frame;
            }
        }
    }

    async fn next_event(&mut self) -> Value {
        match self.next_frame().await {
            Message::Text(text) => serde_json::from_str(&text).expect("event is JSON"),
            other => panic!("expected a text frame, got {other:?}"),
        }
    }

    /// Events up to and including the first one `done` accepts.
    async fn until(&mut self, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let event = self.next_event().await;
            let last = done(&event);
            events.push(event);
            if last {
                return events;
            }
        }
    }

    async fn until_stop(&mut self) -> Vec<Value> {
        self.until(|e| e["type"] == "message_stop").await
    }

    /// Events up to the end of the approval request block; returns them and its key.
    async fn until_request(&mut self) -> (Vec<Value>, String) {
        let mut key = String::new();
        let mut index = None;
        let mut events = Vec::new();
        loop {
            let event = self.next_event().await;
            if event["type"] == "content_block_start" && event["content_block"]["type"] == "approval_request" {
                key = event["content_block"]["approval_key"].as_str().expect("key").to_owned();
                index = Some(event["index"].clone());
            }
            let done = event["type"] == "content_block_stop" && Some(&event["index"]) == index.as_ref();
            events.push(event);
            if done {
                return (events, key);
            }
        }
    }

    /// Waits until the server closes this connection.
    async fn expect_closed(&mut self) {
        loop {
            match tokio::time::timeout(WAIT, self.ws.next()).await.expect("not closed in time") {
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(other)) => panic!("expected close, got {other:?}"),
            }
        }
    }
}

/// The text blocks in `events`, assembled from their deltas: (text, is_final).
fn texts(events: &[Value]) -> Vec<(String, bool)> {
    let mut out: Vec<(Value, String, bool)> = Vec::new();
    for e in events {
        match e["type"].as_str() {
            Some("content_block_start") if e["content_block"]["type"] == "text" => {
                out.push((e["index"].clone(), String::new(), e["content_block"]["is_final"] == true));
            }
            Some("content_block_delta") if e["delta"]["type"] == "text_delta" => {
                if let Some(block) = out.iter_mut().find(|(i, _, _)| *i == e["index"]) {
                    block.1.push_str(e["delta"]["text"].as_str().expect("delta text"));
                }
            }
            _ => {}
        }
    }
    out.into_iter().map(|(_, text, is_final)| (text, is_final)).collect()
}

fn final_text(events: &[Value]) -> String {
    let finals: Vec<String> = texts(events).into_iter().filter(|(_, f)| *f).map(|(t, _)| t).collect();
    assert_eq!(finals.len(), 1, "exactly one final text in {events:#?}");
    finals[0].clone()
}

fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e["content_block"]["type"].as_str() {
            Some(block) => format!("{}:{block}", e["type"].as_str().unwrap_or("?")),
            None => e["type"].as_str().unwrap_or("?").to_owned(),
        })
        .collect()
}

async fn get_json(addr: SocketAddr, path: &str) -> Value {
    reqwest::get(format!("http://{addr}{path}")).await.expect("GET").json().await.expect("JSON body")
}

async fn post(addr: SocketAddr, path: &str) -> u16 {
    let response = reqwest::Client::new().post(format!("http://{addr}{path}")).send().await.expect("POST");
    response.status().as_u16()
}

fn seed000_questions() -> Value {
    json!([
      {"question": "Thảo muốn tập trung vào mục tiêu nào?", "header": "Mục tiêu chính", "multiSelect": false,
       "options": [
         {"label": "Cổ tức bền vững (Recommended)", "description": "Tập trung cổ phiếu trả cổ tức đều"},
         {"label": "Tăng trưởng dài hạn", "description": "Lợi nhuận từ giá tăng trưởng"},
         {"label": "Khác", "description": "Nhập giá trị tùy chỉnh", "input": true}]},
      {"question": "Thời gian nắm giữ dự kiến?", "header": "Kỳ hạn đầu tư", "multiSelect": false,
       "options": [
         {"label": "Trên 3 năm", "description": "Tích lũy dài hạn"},
         {"label": "1-3 năm", "description": "Theo chu kỳ ngành"},
         {"label": "Khác", "description": "Nhập giá trị tùy chỉnh", "input": true}]}
    ])
}

#[tokio::test]
async fn trade_approve_sends_seed_002_request_and_reports_original_args() {
    let sim = start_default().await;
    let mut c = connect(sim.addr, "abc-123").await;
    c.say("Hãy TRADE giúp tôi").await;
    let (events, key) = c.until_request().await;
    assert_eq!(key, "abc-123_1");
    assert_eq!(texts(&events), vec![("Tôi sẽ đặt lệnh mua VNM.".to_owned(), false)]);
    let n = events.len();
    assert_eq!(
        events[n - 2],
        json!({"type": "content_block_start", "index": 1, "content_block": {
            "type": "approval_request", "approval_key": "abc-123_1",
            "actions": [{"name": "execute_trade",
                         "args": {"symbol": "VNM", "quantity": 100, "side": "buy", "price": 82000},
                         "tool_use_id": "toolu_01XyzAbc"}],
            "review_configs": [{"require_approval": true, "timeout": 300}]},
            "message_id": "msg-abc"})
    );
    assert_eq!(events[n - 1], json!({"type": "content_block_stop", "index": 1}));

    c.approve_with(&key, json!({"decisions": [{"type": "approve"}]})).await;
    let events = c.until_stop().await;
    assert_eq!(
        events[..3],
        [
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "approval_result", "approval_key": "abc-123_1"}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"decisions": [{"type": "approve"}]}}),
            json!({"type": "content_block_stop", "index": 2}),
        ]
    );
    assert_eq!(final_text(&events), "Đã đặt lệnh: buy 100 VNM @ 82000");
    sim.shutdown().await;
}

#[tokio::test]
async fn trade_edit_and_reject_report_what_was_decided() {
    let sim = start_default().await;
    let mut c = connect(sim.addr, "edit").await;
    c.say("giao dịch").await;
    let (_, key) = c.until_request().await;
    c.approve_with(
        &key,
        json!({
            "decisions": [{"type": "edit", "edited_action": {"name": "execute_trade",
                "args": {"symbol": "VNM", "quantity": 50, "side": "buy", "price": 82000}}}],
            "user_edit_content": "OK nhưng chỉ mua 50 cổ thôi",
        }),
    )
    .await;
    let events = c.until_stop().await;
    assert_eq!(final_text(&events), "Đã đặt lệnh: buy 50 VNM @ 82000 Ghi chú: OK nhưng chỉ mua 50 cổ thôi");

    // Keys keep counting across turns of the same session.
    c.say("trade again").await;
    let (_, key) = c.until_request().await;
    assert_eq!(key, "edit_2");
    c.approve_with(&key, json!({"decisions": [{"type": "reject", "message": "giá quá cao"}]})).await;
    let events = c.until_stop().await;
    assert_eq!(final_text(&events), "Lệnh đã bị hủy. Lý do: giá quá cao");

    c.say("trade lần ba").await;
    let (_, key) = c.until_request().await;
    c.approve_with(&key, json!({"decisions": [{"type": "reject"}]})).await;
    assert_eq!(final_text(&c.until_stop().await), "Lệnh đã bị hủy.");
    sim.shutdown().await;
}

#[tokio::test]
async fn ask_twice_runs_the_seed_000_flow_and_records_history() {
    let sim = start_default().await;
    let mut c = connect(sim.addr, "S").await;
    c.say("hãy hỏi 2 lần").await;
    let (events, key) = c.until_request().await;
    assert_eq!(key, "S_1");
    assert_eq!(
        types(&events),
        [
            "content_block_start:thinking",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "group_start",
            "content_block_start:tool_use",
            "content_block_stop",
            "content_block_start:tool_result",
            "content_block_stop",
            "group_end",
            "content_block_start:approval_request",
            "content_block_delta",
            "content_block_stop",
        ]
    );
    assert_eq!(events[4], json!({"type": "group_start", "summary": "Chuẩn bị câu hỏi lần 1"}));
    assert_eq!(events[5]["content_block"]["id"], "tc-1");
    assert_eq!(events[5]["content_block"]["name"], "write_todos");
    assert_eq!(events[7]["content_block"], json!({"type": "tool_result", "tool_use_id": "tc-1", "status": "success"}));
    assert_eq!(events[10], json!({"type": "content_block_start", "index": 3, "content_block": {"type": "approval_request", "approval_key": "S_1"}}));
    assert_eq!(
        events[11],
        json!({"type": "content_block_delta", "index": 3, "delta": {
            "action_requests": [{"name": "ask_user_question", "args": {"questions": seed000_questions()}}],
            "review_configs": [{"action_name": "ask_user_question", "allowed_decisions": ["approve", "edit", "reject"]}],
            "timeout_seconds": 600}})
    );
    assert_eq!(events[12], json!({"type": "content_block_stop", "index": 3}));

    let answers1 = json!({
        "Thảo muốn tập trung vào mục tiêu nào?": "Cổ tức bền vững (Recommended)",
        "Thời gian nắm giữ dự kiến?": "Chia cổ tức 5 năm",
    });
    c.approve_with("S_1", json!({"answers": answers1})).await;
    let (events, key) = c.until_request().await;
    assert_eq!(key, "S_2");
    assert_eq!(events[1], json!({"type": "content_block_delta", "index": 4, "delta": {"answers": answers1}}));
    assert_eq!(events[3], json!({"type": "group_start", "summary": "Chuẩn bị câu hỏi lần 2"}));
    assert_eq!(events[4]["content_block"]["id"], "tc-2");
    let question = &events[events.len() - 2]["delta"]["action_requests"][0]["args"]["questions"][0];
    assert_eq!(
        *question,
        json!({"question": "Bạn muốn nhận báo cáo qua kênh nào?", "header": "Kênh báo cáo", "multiSelect": false,
               "options": [{"label": "Email", "description": "Gửi qua email"},
                           {"label": "Telegram", "description": "Tin nhắn Telegram"},
                           {"label": "Khác", "description": "Nhập giá trị tùy chỉnh", "input": true}]})
    );

    c.approve_with("S_2", json!({"answers": {"Bạn muốn nhận báo cáo qua kênh nào?": "Telegram"}})).await;
    let events = c.until_stop().await;
    assert_eq!(final_text(&events), "Cảm ơn! Tổng kết: mục tiêu = Cổ tức bền vững (Recommended); kỳ hạn = Chia cổ tức 5 năm; kênh = Telegram");

    let history = get_json(sim.addr, "/sessions/S/history").await;
    let history = history.as_array().expect("history array");
    assert_eq!(history.len(), 4, "{history:#?}");
    assert_eq!(history[0], json!({"role": "user", "content": [{"type": "text", "text": "hãy hỏi 2 lần"}], "display_type": "content"}));
    let first = &history[1]["content"][0];
    assert_eq!(first["type"], "approval_request");
    assert_eq!(first["approval_key"], "S_1");
    assert_eq!(first["isResolved"], true);
    assert_eq!(first["submittedAnswers"], answers1);
    assert_eq!(first["actionRequests"][0]["args"]["answers"], answers1);
    assert_eq!(history[2]["content"][0]["approval_key"], "S_2");
    assert_eq!(history[2]["content"][0]["isResolved"], true);
    assert_eq!(history[3]["content"][0]["is_final"], true);
    sim.shutdown().await;
}

#[tokio::test]
async fn unanswered_request_times_out_and_late_answers_are_ignored() {
    let sim = start(SimOptions { timeout_secs: 1, token: None }).await;
    let mut c = connect(sim.addr, "T").await;
    c.say("timeout please").await;
    let (events, key) = c.until_request().await;
    assert_eq!(
        events[0],
        json!({"type": "content_block_start", "index": 0, "content_block": {
            "type": "approval_request", "approval_key": "T_1",
            "actions": [{"name": "drop_table", "args": {"table": "users"}}],
            "review_configs": [{"require_approval": true, "timeout": 1}]}})
    );
    let events = c.until_stop().await;
    assert_eq!(
        events[..2],
        [
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "approval_timeout", "approval_key": "T_1"}}),
            json!({"type": "content_block_stop", "index": 1}),
        ]
    );
    assert_eq!(final_text(&events), "Không ai trả lời trong 1 giây; thao tác đã bị hủy.");

    let history = get_json(sim.addr, "/sessions/T/history").await;
    let request = &history[1]["content"][0];
    assert_eq!(request["isResolved"], true);
    assert!(request.get("submittedDecisions").is_none() && request.get("submittedAnswers").is_none());

    // A late answer is recorded and ignored: the next thing we see is the echo turn.
    c.approve_with(&key, json!({"decisions": [{"type": "approve"}]})).await;
    c.say("xin chào").await;
    let events = c.until_stop().await;
    assert_eq!(texts(&events), vec![("Tôi đã nhận: xin chào. Từ khóa: hỏi 2 lần, trade, two actions, timeout, shapes, multi, malformed.".to_owned(), false)]);
    assert_eq!(sim.commands().len(), 3);
    sim.shutdown().await;
}

#[tokio::test]
async fn answered_timeout_request_reports_the_decision() {
    let sim = start_default().await;
    let mut c = connect(sim.addr, "T2").await;
    c.say("hết giờ").await;
    let (_, key) = c.until_request().await;
    c.approve_with(&key, json!({"decisions": [{"type": "reject"}]})).await;
    assert_eq!(final_text(&c.until_stop().await), "drop_table: reject");
    sim.shutdown().await;
}

#[tokio::test]
async fn unknown_keys_are_ignored_and_bad_shapes_get_error_events() {
    let sim = start_default().await;
    let mut c = connect(sim.addr, "V").await;
    c.say("trade").await;
    let (_, key) = c.until_request().await;

    c.approve_with("V_99", json!({"decisions": [{"type": "approve"}]})).await;
    c.approve_with(&key, json!({"answers": {"q": "a"}})).await;
    assert_eq!(
        c.next_event().await,
        json!({"type": "error", "message": "invalid approval: a tool-call approval must be answered with decisions, not answers"})
    );
    c.approve_with(&key, json!({"decisions": []})).await;
    assert_eq!(c.next_event().await, json!({"type": "error", "message": "invalid approval: expected 1 decision(s), one per action, got 0"}));
    c.approve_with(&key, json!({"decisions": [{"type": "edit", "edited_action": {"name": "execute_trade"}}]})).await;
    assert_eq!(c.next_event().await, json!({"type": "error", "message": "invalid approval: decision 0 (edit) needs an object edited_action.args"}));
    c.send(json!({"type": "teleport"})).await;
    c.ws.send(Message::Text("{not json".into())).await.expect("send");
    c.approve_with(&key, json!({"decisions": [{"type": "approve"}]})).await;
    let event = c.next_event().await;
    assert_eq!(event["content_block"]["type"], "approval_result", "{event}");
    c.until_stop().await;

    // Every JSON command is recorded in order, invalid ones too; the non-JSON frame is not.
    let commands = sim.commands();
    let kinds: Vec<&str> = commands.iter().map(|c| c["type"].as_str().unwrap_or("?")).collect();
    assert_eq!(kinds, ["message", "approval", "approval", "approval", "approval", "teleport", "approval"]);
    assert_eq!(commands[1]["approval_key"], "V_99");
    assert_eq!(get_json(sim.addr, "/commands").await, Value::Array(commands));
    sim.shutdown().await;
}

#[tokio::test]
async fn two_actions_check_allowed_decisions_per_action() {
    let sim = start_default().await;
    let mut c = connect(sim.addr, "C").await;
    c.say("two actions").await;
    let (events, key) = c.until_request().await;
    let block = &events[0]["content_block"];
    assert_eq!(block["actions"][1]["description"], "Email the daily P&L report");
    assert_eq!(block["review_configs"][1]["allowed_decisions"], json!(["approve", "reject"]));
    let edit = json!({"type": "edit", "edited_action": {"name": "send_report", "args": {}}});
    c.approve_with(&key, json!({"decisions": [{"type": "approve"}, edit]})).await;
    assert_eq!(c.next_event().await["message"], "invalid approval: decision 1 type \"edit\" is not allowed for send_report (allowed: approve, reject)");
    let edit = json!({"type": "edit", "edited_action": {"name": "execute_trade", "args": {"quantity": 5}}});
    c.approve_with(&key, json!({"decisions": [edit, {"type": "reject"}]})).await;
    let events = c.until_stop().await;
    assert_eq!(final_text(&events), "execute_trade: edit; send_report: reject");

    let history = get_json(sim.addr, "/sessions/C/history").await;
    assert_eq!(history[1]["content"][0]["submittedDecisions"][1], json!({"type": "reject"}));
    sim.shutdown().await;
}

#[tokio::test]
async fn shapes_and_multi_select_questions() {
    let sim = start_default().await;
    let mut c = connect(sim.addr, "Q").await;
    c.say("Shapes").await;
    let q = "Triển khai lên môi trường nào?";
    let (events, key) = c.until_request().await;
    assert_eq!(key, "Q_1");
    assert_eq!(events.len(), 2, "shape A has no delta");
    assert_eq!(events[0]["content_block"]["actions"][0]["args"]["questions"][0]["question"], q);
    assert_eq!(events[0]["content_block"]["review_configs"][0]["timeout"], 600);
    c.approve_with(&key, json!({"answers": {q: "Staging"}})).await;
    let (events, key) = c.until_request().await;
    assert_eq!(key, "Q_2");
    assert_eq!(events[events.len() - 2]["delta"]["timeout_seconds"], 600);
    assert_eq!(events[events.len() - 2]["delta"]["action_requests"][0]["args"]["questions"][0]["question"], q);
    c.approve_with(&key, json!({"answers": {q: "Production (Recommended)"}})).await;
    assert_eq!(final_text(&c.until_stop().await), "A: Staging; B: Production (Recommended)");

    c.say("multi").await;
    let (events, key) = c.until_request().await;
    let question = &events[events.len() - 2]["delta"]["action_requests"][0]["args"]["questions"][0];
    assert_eq!(question["multiSelect"], true);
    assert_eq!(question["options"][3], json!({"label": "Khác", "description": "Nhập giá trị tùy chỉnh", "input": true}));
    c.approve_with(&key, json!({"decisions": [{"type": "approve"}]})).await;
    assert_eq!(c.next_event().await["message"], "invalid approval: a question must be answered with answers, not decisions");
    c.approve_with(&key, json!({"answers": {"Nhóm ngành quan tâm?": "Ngân hàng, Thép (Steel)"}})).await;
    assert_eq!(final_text(&c.until_stop().await), "Bạn chọn: Ngân hàng, Thép (Steel)");
    sim.shutdown().await;
}

#[tokio::test]
async fn malformed_scenario_sends_each_bad_frame_then_carries_on() {
    let sim = start_default().await;
    let mut c = connect(sim.addr, "M").await;
    c.say("malformed").await;
    assert!(matches!(c.next_frame().await, Message::Binary(_)));
    assert_eq!(c.next_frame().await, Message::Text("{not json".into()));
    let huge = c.next_event().await;
    assert!(huge["delta"]["text"].as_str().expect("huge text").len() > 1024 * 1024);
    assert_eq!(c.next_event().await, json!({"type": "mystery_event"}));
    let events = c.until_stop().await;
    assert_eq!(texts(&events), vec![("Vẫn chạy.".to_owned(), false)]);
    assert_eq!(events[0]["index"], 1);
    sim.shutdown().await;
}

#[tokio::test]
async fn events_produced_while_disconnected_are_flushed_on_reconnect() {
    // The deadline only has to outlast reading the request and calling set_down.
    let sim = start(SimOptions { timeout_secs: 2, token: None }).await;
    let mut c = connect(sim.addr, "B").await;
    c.say("timeout").await;
    let (_, key) = c.until_request().await;
    sim.set_down(true); // detaches at once: the timeout fires with no live connection
    c.expect_closed().await;
    sim.set_down(false);
    let mut c = connect(sim.addr, "B").await;
    let events = c.until_stop().await;
    assert_eq!(events[0]["content_block"], json!({"type": "approval_timeout", "approval_key": key}));
    assert_eq!(final_text(&events), "Không ai trả lời trong 2 giây; thao tác đã bị hủy.");
    sim.shutdown().await;
}

#[tokio::test]
async fn a_new_connection_replaces_the_old_one() {
    let sim = start_default().await;
    let mut old = connect(sim.addr, "R").await;
    old.say("trade").await;
    let (_, key) = old.until_request().await;
    let mut new = connect(sim.addr, "R").await;
    old.expect_closed().await;
    new.approve_with(&key, json!({"decisions": [{"type": "approve"}]})).await;
    assert_eq!(final_text(&new.until_stop().await), "Đã đặt lệnh: buy 100 VNM @ 82000");
    sim.shutdown().await;
}

#[tokio::test]
async fn bearer_token_is_required_when_configured() {
    let sim = start(SimOptions { timeout_secs: 20, token: Some("s3cret".into()) }).await;
    assert_eq!(status_of(try_connect(sim.addr, "A", None).await), 401);
    assert_eq!(status_of(try_connect(sim.addr, "A", Some("wrong")).await), 401);
    let mut c = try_connect(sim.addr, "A", Some("s3cret")).await.expect("authorized connect");
    c.say("hello").await;
    c.until_stop().await;
    sim.shutdown().await;
}

#[tokio::test]
async fn control_down_closes_and_refuses_until_up_and_state_survives() {
    let sim = start_default().await;
    assert_eq!(reqwest::get(format!("http://{}/health", sim.addr)).await.expect("GET").text().await.expect("body"), "ok");
    let mut c = connect(sim.addr, "D").await;
    c.say("trade").await;
    let (_, key) = c.until_request().await;

    assert_eq!(post(sim.addr, "/control/down").await, 204);
    c.expect_closed().await;
    assert_eq!(status_of(try_connect(sim.addr, "D", None).await), 503);

    assert_eq!(post(sim.addr, "/control/up").await, 204);
    let mut c = connect(sim.addr, "D").await;
    let history = get_json(sim.addr, "/sessions/D/history").await;
    assert_eq!(history[2]["content"][0]["isResolved"], false);
    c.approve_with(&key, json!({"decisions": [{"type": "approve"}]})).await;
    assert_eq!(final_text(&c.until_stop().await), "Đã đặt lệnh: buy 100 VNM @ 82000");
    let history = get_json(sim.addr, "/sessions/D/history").await;
    assert_eq!(history[2]["content"][0]["isResolved"], true);
    assert_eq!(history[2]["content"][0]["submittedDecisions"], json!([{"type": "approve"}]));
    sim.shutdown().await;
}

#[tokio::test]
async fn cancel_ends_the_turn_and_queued_messages_run_after() {
    let sim = start_default().await;
    let mut c = connect(sim.addr, "X").await;
    c.say("trade").await;
    let (_, key) = c.until_request().await;
    c.say("queued one").await;
    c.send(json!({"type": "cancel", "session_id": "X"})).await;
    let events = c.until_stop().await;
    assert_eq!(texts(&events), vec![("Đã hủy.".to_owned(), false)]);
    let events = c.until_stop().await;
    assert!(texts(&events)[0].0.starts_with("Tôi đã nhận: queued one."), "{events:?}");

    let history = get_json(sim.addr, "/sessions/X/history").await;
    let request = history.as_array().expect("array").iter().find(|h| h["content"][0]["approval_key"] == key).expect("request in history");
    assert_eq!(request["content"][0]["isResolved"], true);
    sim.shutdown().await;
}
