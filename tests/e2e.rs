//! End to end: reference agent ↔ bridge ↔ console, asserting the exact commands the
//! agent received. Each test starts its own agent and bridge on fresh ports and a
//! fresh SQLite file.

mod support;

use std::time::Duration;

use hitl_bridge::engine::ActError;
use hitl_bridge::interaction::{Actor, Refusal, UserAction};
use hitl_bridge::protocol::Decision;
use serde_json::json;
use support::*;

const Q1: &str = "Thảo muốn tập trung vào mục tiêu nào?";
const Q2: &str = "Thời gian nắm giữ dự kiến?";

/// Seed 000: two Vietnamese questions, a second ask, a final text that uses the answers.
#[tokio::test]
async fn seed_000_two_rounds_of_questions() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(20, &[]).await;

    bridge.send("hỏi 2 lần").await;
    bridge.expect("⚙ Chuẩn bị câu hỏi lần 1: write_todos ✓").await;
    bridge.expect("[1/2] Mục tiêu chính").await;
    bridge.send("1").await;
    bridge.expect("[2/2] Kỳ hạn đầu tư").await;
    bridge.send("3").await;
    bridge.expect("Khác: type your answer").await;
    bridge.send("Ngắn hạn").await;
    bridge.expect("[1/1] Kênh báo cáo").await;
    bridge.send("2").await;
    bridge.expect("agent: Cảm ơn! Tổng kết: mục tiêu = Cổ tức bền vững (Recommended); kỳ hạn = Ngắn hạn; kênh = Telegram").await;

    let s = session_id(&sim);
    let commands = sim.commands();
    assert_eq!(
        support::without_message_id(commands[0].clone()),
        json!({"type":"message","session_id":s,"content":[{"type":"text","text":"hỏi 2 lần"}],
        "user":{"platform":"console","id":"console","name":"Thảo"}})
    );
    let approvals = approvals(&sim);
    assert_eq!(approvals.len(), 2);
    // Exact text, so the key order (question order) is checked too.
    assert_eq!(
        serde_json::to_string(&approvals[0]).unwrap(),
        serde_json::to_string(&json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
            "answers":{Q1:"Cổ tức bền vững (Recommended)",Q2:"Ngắn hạn"}}))
        .unwrap()
    );
    assert_eq!(
        approvals[1],
        json!({"type":"approval","session_id":s,"approval_key":format!("{s}_2"),
        "answers":{"Bạn muốn nhận báo cáo qua kênh nào?":"Telegram"}})
    );
    stop(bridge, sim).await;
}

/// Seed 002: approve sends exactly one approve decision.
#[tokio::test]
async fn seed_002_approve() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(20, &[]).await;
    bridge.send("trade").await;
    bridge.expect(r#"args: {"symbol":"VNM","quantity":100,"side":"buy","price":82000}"#).await;
    bridge.expect("execute_trade? [a]pprove").await;
    bridge.send("a").await;
    bridge.expect("decided by Thảo").await;
    bridge.expect("agent: Đã đặt lệnh: buy 100 VNM @ 82000").await;
    let s = session_id(&sim);
    assert_eq!(approvals(&sim), vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]);
    stop(bridge, sim).await;
}

/// Seed 002: reject with a reason.
#[tokio::test]
async fn seed_002_reject_with_reason() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(20, &[]).await;
    bridge.send("trade").await;
    bridge.expect("execute_trade?").await;
    bridge.send("r quá rủi ro").await;
    bridge.expect("agent: Lệnh đã bị hủy. Lý do: quá rủi ro").await;
    let s = session_id(&sim);
    assert_eq!(
        approvals(&sim),
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"reject","message":"quá rủi ro"}]})]
    );
    stop(bridge, sim).await;
}

/// Seed 002: an edit with invalid JSON, then a non-object, is refused with a clear
/// message and sends nothing; the valid edit changes what the agent reports.
#[tokio::test]
async fn seed_002_edit_invalid_then_valid() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(20, &[]).await;
    bridge.send("trade").await;
    bridge.expect("execute_trade?").await;
    bridge.send("e {quantity: 50").await;
    bridge.expect("! invalid JSON").await;
    bridge.send("e").await;
    bridge.expect("new args for execute_trade as a JSON object").await;
    bridge.send("[50]").await;
    bridge.expect("! the args must be a JSON object, not an array").await;
    assert!(approvals(&sim).is_empty(), "nothing is sent for a refused edit");
    bridge.send(r#"e {"symbol":"VNM","quantity":50,"side":"buy","price":82000}"#).await;
    bridge.expect("agent: Đã đặt lệnh: buy 50 VNM @ 82000").await;
    let s = session_id(&sim);
    assert_eq!(
        approvals(&sim),
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"edit","edited_action":{"name":"execute_trade","args":{"symbol":"VNM","quantity":50,"side":"buy","price":82000}}}]})]
    );
    stop(bridge, sim).await;
}

/// Two actions: one decision each, full length, in action order; a decision type the
/// action does not allow is refused.
#[tokio::test]
async fn two_actions_in_one_request() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(20, &[]).await;
    bridge.send("two actions").await;
    bridge.expect("│ 2. send_report — Email the daily P&L report").await;
    bridge.expect("execute_trade?").await;
    bridge.send("a").await;
    bridge.expect("send_report? [a]pprove · [r]eject [reason] · [c]omment <text> >").await;
    bridge.send("e {}").await;
    bridge.expect("! edit is not allowed for send_report").await;
    bridge.send("r").await;
    bridge.expect("agent: execute_trade: approve; send_report: reject").await;
    let s = session_id(&sim);
    assert_eq!(
        approvals(&sim),
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"approve"},{"type":"reject"}]})]
    );
    stop(bridge, sim).await;
}

/// Nobody answers: the agent's approval_timeout ends it; a late click is refused.
#[tokio::test]
async fn unanswered_request_times_out_at_the_agent() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(1, &[]).await;
    bridge.send("timeout").await;
    bridge.expect("drop_table?").await;
    let id = bridge.wait_pending().await.id;
    bridge.expect("expired at").await;
    bridge.expect("agent: Không ai trả lời trong 1 giây; thao tác đã bị hủy.").await;
    let late = bridge.engine().act(&id, Actor::new("console", "console", "Thảo"), UserAction::Decide { action: 0, decision: Decision::Approve }).await;
    assert!(matches!(late, Err(ActError::Refused(Refusal::Expired))), "{late:?}");
    assert!(approvals(&sim).is_empty());
    stop(bridge, sim).await;
}

/// The bridge's own deadline: with the agent unreachable, the bridge expires the
/// request at deadline + grace and sends reject decisions saying why, once the agent
/// is back.
#[tokio::test]
async fn bridge_expires_and_rejects_when_the_agent_is_silent() {
    let sim = start_sim(1).await;
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(&sim, &dir, &[("timeouts.grace_secs", "0")]);
    s.backend.history_url = None;
    let mut bridge = Bridge::start(&s).await;
    bridge.send("timeout").await;
    bridge.expect("drop_table?").await;
    sim.set_down(true);
    bridge.expect("(no decision in time); rejected automatically").await;
    sim.set_down(false);
    let got = wait_approvals(&sim, 1).await;
    let s = session_id(&sim);
    assert_eq!(
        got,
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"reject","message":"timed out after 1 s without a human decision"}]})]
    );
    stop(bridge, sim).await;
}

/// The same question in shape A and in shape B renders and answers the same way.
#[tokio::test]
async fn same_question_in_both_shapes() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(20, &[]).await;
    bridge.send("shapes").await;
    bridge.expect("[1/1] Môi trường").await;
    bridge.expect("2) Production (Recommended) — Môi trường thật").await;
    bridge.send("2").await;
    bridge.expect("[1/1] Môi trường").await;
    bridge.expect("2) Production (Recommended) — Môi trường thật").await;
    bridge.send("1").await;
    bridge.expect("agent: A: Production (Recommended); B: Staging").await;
    let s = session_id(&sim);
    let q = "Triển khai lên môi trường nào?";
    assert_eq!(
        approvals(&sim),
        vec![
            json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"answers":{q:"Production (Recommended)"}}),
            json!({"type":"approval","session_id":s,"approval_key":format!("{s}_2"),"answers":{q:"Staging"}}),
        ]
    );
    stop(bridge, sim).await;
}

/// Multi-select with the input option: labels in option order, typed text in place of
/// "Khác".
#[tokio::test]
async fn multi_select_with_other() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(20, &[]).await;
    bridge.send("multi").await;
    bridge.expect("answer with numbers separated by commas, or type text for Khác").await;
    bridge.send("4, 2,1").await;
    bridge.expect("Khác: type your answer").await;
    bridge.send("Năng lượng").await;
    bridge.expect("agent: Bạn chọn: Ngân hàng, Thép (Steel), Năng lượng").await;
    let s = session_id(&sim);
    assert_eq!(
        approvals(&sim),
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "answers":{"Nhóm ngành quan tâm?":"Ngân hàng, Thép (Steel), Năng lượng"}})]
    );
    stop(bridge, sim).await;
}

/// A skipped question is answered "[No preference]".
#[tokio::test]
async fn skipped_question() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(20, &[]).await;
    bridge.send("multi").await;
    bridge.expect("[1/1] Ngành").await;
    bridge.send("s").await;
    bridge.expect("agent: Bạn chọn: [No preference]").await;
    let s = session_id(&sim);
    assert_eq!(
        approvals(&sim),
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "answers":{"Nhóm ngành quan tâm?":"[No preference]"}})]
    );
    stop(bridge, sim).await;
}

/// Stop the bridge with a request pending, start it again on the same database: the
/// request is shown again, and answering it sends exactly one command.
#[tokio::test]
async fn restart_with_a_pending_request() {
    let sim = start_sim(20).await;
    let dir = tempfile::tempdir().unwrap();
    let settings = settings(&sim, &dir, &[]);
    let mut bridge = Bridge::start(&settings).await;
    bridge.send("trade").await;
    bridge.expect("execute_trade?").await;
    bridge.stop().await;

    let mut bridge = Bridge::start(&settings).await;
    bridge.expect("execute_trade? [a]pprove").await;
    bridge.send("a").await;
    bridge.expect("agent: Đã đặt lệnh: buy 100 VNM @ 82000").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let s = session_id(&sim);
    assert_eq!(approvals(&sim), vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]);
    stop(bridge, sim).await;
}

/// Partial answers survive a restart: the first question's answer is kept.
#[tokio::test]
async fn restart_keeps_partial_answers() {
    let sim = start_sim(20).await;
    let dir = tempfile::tempdir().unwrap();
    let settings = settings(&sim, &dir, &[]);
    let mut bridge = Bridge::start(&settings).await;
    bridge.send("hỏi 2 lần").await;
    bridge.expect("[1/2] Mục tiêu chính").await;
    bridge.send("2").await;
    bridge.expect("[2/2] Kỳ hạn đầu tư").await;
    bridge.stop().await;

    let mut bridge = Bridge::start(&settings).await;
    bridge.expect("[1/2] Mục tiêu chính").await;
    let pending = bridge.wait_pending().await;
    let hitl_bridge::interaction::Draft::Answers { answers } = &pending.draft else { panic!("a question") };
    assert_eq!(answers[0].selected, vec![1], "the first answer was stored before the restart");
    stop(bridge, sim).await;
}

/// Binary, unparseable, oversized and unknown frames are skipped; the session goes on.
#[tokio::test]
async fn malformed_frames_are_skipped() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(20, &[]).await;
    bridge.send("malformed").await;
    bridge.expect("agent: Vẫn chạy.").await;
    bridge.send("trade").await;
    bridge.expect("execute_trade?").await;
    bridge.send("a").await;
    bridge.expect("agent: Đã đặt lệnh: buy 100 VNM @ 82000").await;
    assert_eq!(approvals(&sim).len(), 1);
    assert!(!bridge.transcript.iter().any(|l| l.contains("xxxxxxxx")), "the oversized frame was not shown");
    stop(bridge, sim).await;
}

/// The agent is down when the decision is made; once it is back the command arrives,
/// exactly once.
#[tokio::test]
async fn agent_down_at_decision_time_gets_the_command_once() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(20, &[]).await;
    bridge.send("trade").await;
    bridge.expect("execute_trade?").await;
    sim.set_down(true);
    bridge.send("a").await;
    bridge.expect("decided by Thảo").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(approvals(&sim).is_empty(), "nothing can arrive while the agent is down");
    sim.set_down(false);
    bridge.expect("agent: Đã đặt lệnh: buy 100 VNM @ 82000").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(approvals(&sim).len(), 1, "{:?}", approvals(&sim));
    stop(bridge, sim).await;
}

/// Someone who is neither the requester nor an approver is refused; a second decision
/// is refused with who decided; the agent gets one command.
#[tokio::test]
async fn unauthorized_and_second_click_change_nothing() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(20, &[]).await;
    bridge.send("trade").await;
    bridge.expect("execute_trade?").await;
    let id = bridge.wait_pending().await.id;
    let approve = UserAction::Decide { action: 0, decision: Decision::Approve };
    let mallory = bridge.engine().act(&id, Actor::new("console", "mallory", "Mallory"), approve.clone()).await;
    assert!(matches!(mallory, Err(ActError::Refused(Refusal::NotAllowed))), "{mallory:?}");
    assert_eq!(bridge.pending().await.len(), 1, "still pending");

    bridge.send("r").await;
    bridge.expect("decided by Thảo").await;
    let again = bridge.engine().act(&id, Actor::new("console", "console", "Thảo"), approve).await;
    assert!(matches!(&again, Err(ActError::Refused(Refusal::AlreadyDecided { by, .. })) if by == "Thảo"), "{again:?}");
    bridge.expect("agent: Lệnh đã bị hủy.").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let s = session_id(&sim);
    assert_eq!(approvals(&sim), vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"reject"}]})]);
    // The audit log has who tried what, then who decided.
    let audit = bridge.store.audit_log(&format!("{s}_1")).await.unwrap();
    let lines: Vec<(String, Option<String>)> = audit.iter().map(|e| (e.outcome.clone(), e.actor.as_ref().map(|a| a.name.clone()))).collect();
    assert_eq!(lines, vec![("refused".into(), Some("Mallory".into())), ("resolved".into(), Some("Thảo".into()))]);
    assert_eq!(
        audit[0].reply,
        Some(json!({"attempted":{"op":"decide","action":0,"decision":{"type":"approve"}},"reason":"you are not allowed to answer this request"}))
    );
    stop(bridge, sim).await;
}

/// A configured approver (not the requester) may decide.
#[tokio::test]
async fn configured_approver_may_decide() {
    let sim = start_sim(20).await;
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(&sim, &dir, &[]);
    s.access.approvers = vec!["console:lead".into()];
    let mut bridge = Bridge::start(&s).await;
    bridge.send("trade").await;
    bridge.expect("execute_trade?").await;
    let id = bridge.wait_pending().await.id;
    let lead = bridge.engine().act(&id, Actor::new("console", "lead", "Lead"), UserAction::Decide { action: 0, decision: Decision::Approve }).await;
    assert!(lead.is_ok(), "{lead:?}");
    bridge.expect("decided by Lead").await;
    bridge.expect("agent: Đã đặt lệnh").await;
    stop(bridge, sim).await;
}

/// With `backend.token` set, the bridge authenticates; the agent refuses anyone else.
#[tokio::test]
async fn bearer_token_is_sent() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sim = hitl_bridge::agent_sim::spawn(listener, hitl_bridge::agent_sim::SimOptions { timeout_secs: 20, token: Some("s3cret".into()) }).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut bridge = Bridge::start(&settings(&sim, &dir, &[("backend.token", "s3cret")])).await;
    bridge.send("trade").await;
    bridge.expect("execute_trade?").await;
    bridge.stop().await;

    // Without the token the agent answers 401 and hears nothing from this bridge.
    let other = tempfile::tempdir().unwrap();
    let mut bridge = Bridge::start(&settings(&sim, &other, &[])).await;
    bridge.send("trade").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(sim.commands().len(), 1, "only the first bridge's message arrived: {:?}", sim.commands());
    stop(bridge, sim).await;
}

/// Answered by another client while the bridge was down: after the restart, history
/// shows it resolved and the bridge marks it so, sending nothing.
#[tokio::test]
async fn resolved_elsewhere_while_the_bridge_was_down() {
    use futures_util::{SinkExt, StreamExt};
    let sim = start_sim(20).await;
    let dir = tempfile::tempdir().unwrap();
    let settings = settings(&sim, &dir, &[]);
    let mut bridge = Bridge::start(&settings).await;
    bridge.send("trade").await;
    bridge.expect("execute_trade?").await;
    bridge.stop().await;

    // Another client of the same session approves.
    let s = session_id(&sim);
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws/{s}", sim.addr)).await.unwrap();
    let approve = json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]});
    ws.send(tokio_tungstenite::tungstenite::Message::Text(approve.to_string())).await.unwrap();
    // Wait for the agent's final text, so the history is complete.
    while let Some(Ok(frame)) = ws.next().await {
        if frame.to_text().unwrap_or("").contains("message_stop") {
            break;
        }
    }
    drop(ws);

    let mut bridge = Bridge::start(&settings).await;
    bridge.expect("resolved elsewhere").await;
    assert!(bridge.pending().await.is_empty());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(approvals(&sim), vec![approve], "the bridge sent nothing itself");
    stop(bridge, sim).await;
}

/// Two replicas on one database: the session is connected by one of them only; a
/// decision that reaches the other replica (as behind a load balancer) gets to the
/// agent once, through the holder's connection; after the holder stops, the other
/// replica takes the session over.
#[tokio::test]
async fn two_replicas_share_sessions_through_leases() {
    let Rig { sim, mut bridge, dir } = Rig::start(20, &[("backend.lease_secs", "3"), ("backend.replica_id", "first")]).await;
    let second = settings(&sim, &dir, &[("backend.lease_secs", "3"), ("backend.replica_id", "second"), ("console.enabled", "false")]);
    let replica = hitl_bridge::app::App::start(&second, None::<(tokio::io::BufReader<tokio::io::Empty>, tokio::io::Sink)>).await.unwrap();
    let thao = Actor::new("console", "console", "Thảo");

    bridge.send("trade").await;
    bridge.expect("execute_trade?").await;
    let id = bridge.wait_pending().await.id;
    let decided = replica.engine.act(&id, thao.clone(), UserAction::Decide { action: 0, decision: Decision::Approve }).await;
    assert!(matches!(decided, Ok(hitl_bridge::engine::ActOutcome::Resolved(_))), "{decided:?}");
    bridge.expect("agent: Đã đặt lệnh: buy 100 VNM @ 82000").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let s = session_id(&sim);
    assert_eq!(approvals(&sim), vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]);
    assert_eq!(bridge.transcript.iter().filter(|l| l.starts_with("agent: Đã đặt lệnh")).count(), 1, "the agent's text was received and shown once");

    // The first replica stops (and gives up its lease); the second carries on.
    bridge.stop().await;
    let chat = hitl_bridge::platform::console::Console::chat();
    replica.engine.user_message(chat, thao.clone(), "trade".into()).await.unwrap();
    let pending = wait_until(|| async {
        let store = hitl_bridge::store::Store::connect(&second.store.url).await.ok()?;
        store.pending_interactions().await.ok()?.into_iter().next()
    })
    .await;
    replica.engine.act(&pending.id, thao, UserAction::Decide { action: 0, decision: Decision::Reject { message: None } }).await.unwrap();
    let got = wait_approvals(&sim, 2).await;
    assert_eq!(got[1], json!({"type":"approval","session_id":s,"approval_key":format!("{s}_2"),"decisions":[{"type":"reject"}]}));
    replica.stop().await;
    sim.shutdown().await;
}

/// Where the review allows `respond`, a comment is sent as a respond decision.
#[tokio::test]
async fn comment_becomes_a_respond_decision_where_allowed() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(20, &[]).await;
    bridge.send("migration").await;
    bridge.expect("│ 1. run_migration — Add an index on orders(created_at)").await;
    bridge.expect("run_migration? [a]pprove · [r]eject [reason] · [c]omment <text> >").await;
    bridge.send("c chạy lúc 2 giờ sáng").await;
    bridge.expect("agent: run_migration: respond (chạy lúc 2 giờ sáng)").await;
    let s = session_id(&sim);
    assert_eq!(
        approvals(&sim),
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"respond","message":"chạy lúc 2 giờ sáng"}]})]
    );
    stop(bridge, sim).await;
}

/// The agent asked, but the request was lost with the bridge (it died between the frame
/// and storing it): after the reconnect, history shows the request still waiting with its
/// key and review configs, the bridge shows it, and the decision reaches the agent under
/// that key.
#[tokio::test]
async fn a_request_lost_in_flight_is_recovered_from_history() {
    use futures_util::StreamExt;
    use std::sync::{Arc, Mutex};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    // The agent's WebSocket: records every command, sends nothing (the frame was lost).
    let ws = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ws_addr = ws.local_addr().unwrap();
    let received: Arc<Mutex<Vec<serde_json::Value>>> = Arc::default();
    let log = received.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = ws.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let Ok(mut socket) = tokio_tungstenite::accept_async(stream).await else { return };
                while let Some(Ok(frame)) = socket.next().await {
                    if let Ok(command) = serde_json::from_str(frame.to_text().unwrap_or_default()) {
                        log.lock().unwrap().push(command);
                    }
                }
            });
        }
    });
    // Its history: the request still waiting.
    let history = json!([{"role":"assistant","display_type":"content","content":[{"type":"approval_request",
        "approval_key":"lost_1","isResolved":false,
        "actionRequests":[{"name":"execute_trade","args":{"symbol":"VNM","quantity":100}}],
        "reviewConfigs":[{"action_name":"execute_trade","allowed_decisions":["approve","reject"]}]}]}])
    .to_string();
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http_addr = http.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = http.accept().await {
            let body = history.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request).await;
                let response =
                    format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });

    let sim = start_sim(60).await; // unused; `settings` wants one
    let dir = tempfile::tempdir().unwrap();
    let url = format!("ws://{ws_addr}/ws/{{session_id}}");
    let history_url = format!("http://{http_addr}/sessions/{{session_id}}/history");
    let mut bridge = Bridge::start(&settings(&sim, &dir, &[("backend.url", &url), ("backend.history_url", &history_url)])).await;
    bridge.send("are you there?").await;
    bridge.expect("execute_trade? [a]pprove").await;
    let shown = bridge.wait_pending().await;
    assert_eq!(shown.approval_key(), "lost_1");
    bridge.send("a").await;
    let approval = wait_until(|| async { received.lock().unwrap().iter().find(|c| c["type"] == "approval").cloned() }).await;
    assert_eq!(approval, json!({"type":"approval","session_id":shown.session_id,"approval_key":"lost_1","decisions":[{"type":"approve"}]}));
    stop(bridge, sim).await;
}
