//! The web inbox over HTTP (docs/web.md): a real bridge with the inbox on, requests
//! pushed over `/v1` and shown on the fake Telegram, people signed in with one-time
//! links. What a browser cannot be trusted to check by itself is checked here on the
//! wire: the security headers and cookie flags, links that work once and not after
//! ten minutes, CSRF, who may see and decide what (the same rules as a click), that
//! a decision is a click (the agent's reply, the locked card, the audit row with the
//! channel `web`), sessions across a restart, escaping, and `hitl-bridge web login`.
//! tests/web_browser.rs drives the same pages in Chromium.

mod support;

use reqwest::StatusCode;
use reqwest::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, REFERRER_POLICY, SET_COOKIE, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::web_inbox::{Inbox, ana, mallory, minh, person, title};

fn trade(key: &str) -> Value {
    json!({
        "approval_key": key, "session_id": "desk-7", "text": "Nightly rebalance.", "timeout_seconds": 600,
        "actions": [{"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100}, "description": "Buy VNM"}],
        "review_configs": [{"action_name": "execute_trade", "allowed_decisions": ["approve", "edit", "reject"]}]
    })
}

/// Sign in, see the request in the inbox, approve it: the agent gets exactly the
/// approval, the Telegram card locks with Ana's name, the audit row says `web`, and
/// the inbox is empty again.
#[tokio::test]
async fn approve_in_the_browser_is_a_click() {
    let inbox = Inbox::start().await;
    let id = inbox.push(trade("web-1")).await;
    let card = inbox.tg_message("execute_trade").await;
    let ana = inbox.sign_in(&ana()).await;

    let (status, _, page) = ana.get("/inbox").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(title(&page), "(1) Inbox");
    assert!(page.contains(&format!(r#"href="/inbox/requests/{id}""#)) && page.contains("execute_trade"), "{page}");
    assert!(page.contains("telegram:-100777"), "where it is shown: {page}");

    let (status, _, page) = ana.get(&format!("/inbox/requests/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    for button in [">Approve</button>", ">Edit</button>", ">Reject</button>", ">Comment</button>"] {
        assert!(page.contains(button), "{button}: {page}");
    }
    assert!(page.contains(r#"<span class="key">&quot;symbol&quot;</span>: <span class="str">&quot;VNM&quot;</span>"#), "{page}");
    assert!(page.contains("Nightly rebalance.") && page.contains("Buy VNM"));
    assert!(page.contains("<dd>telegram:-100777</dd>"), "where it is shown: {page}");

    let csrf = ana.csrf().await;
    let (status, headers, _) = ana.post(&format!("/inbox/requests/{id}/decide"), &[("csrf", &csrf), ("action", "0"), ("decision", "approve")]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers["location"], format!("/inbox/requests/{id}"));

    let state = inbox.decided("web-1").await;
    assert_eq!(state["status"], "resolved");
    assert_eq!(state["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(state["decided_by"], json!({"platform": "telegram", "id": "3003", "name": "Ana"}));
    inbox.tg_locked(card["message_id"].as_i64().unwrap(), "Ana").await;

    let store = inbox.store().await;
    let audit = store.audit_log("web-1").await.unwrap();
    let resolved = audit.iter().find(|e| e.outcome == "resolved").expect("a resolved entry");
    let actor = resolved.actor.as_ref().expect("who");
    assert_eq!((actor.platform.as_str(), actor.user_id.as_str(), actor.channel.as_deref()), ("telegram", "3003", Some("web")));
    let mut export = Vec::new();
    hitl_bridge::admin::audit_export::run(&store, i64::MIN, hitl_bridge::admin::audit_export::Format::Jsonl, &mut export).await.unwrap();
    let export = String::from_utf8(export).unwrap();
    assert!(export.contains(r#""who":{"platform":"telegram","user_id":"3003","name":"Ana","channel":"web"}"#), "{export}");
    store.close().await;

    let (_, _, page) = ana.get("/inbox").await;
    assert_eq!(title(&page), "(0) Inbox");
    let (_, _, page) = ana.get(&format!("/inbox/requests/{id}")).await;
    assert!(page.contains("Ana") && !page.contains(">Approve</button>"), "decided: no buttons, who decided: {page}");
    assert!(page.contains("Ana (telegram:3003) via web"), "the audit trail names the channel: {page}");
    inbox.stop().await;
}

/// The filters: by age (just pushed is younger than five minutes) and by chat, chosen
/// on `/inbox/chats`, which lists the chats showing what waits on the person and links
/// each to the filtered inbox; the first page itself lists no chats. Someone on whom
/// nothing waits learns no chat's name there.
#[tokio::test]
async fn filters_by_age_and_by_a_chat_chosen_on_its_own_page() {
    const DEPLOYS: i64 = -100_778;
    let inbox = Inbox::start().await;
    inbox.tg().group(DEPLOYS, "deploys", false);
    let in_ops = inbox.push(trade("web-f-ops")).await;
    let mut deploy = trade("web-f-deploy");
    deploy["targets"] = json!([{"platform": "telegram", "chat_id": DEPLOYS.to_string()}]);
    let in_deploys = inbox.push(deploy).await;
    let ana = inbox.sign_in(&ana()).await;

    let (_, _, page) = ana.get("/inbox").await;
    assert_eq!(title(&page), "(2) Inbox");
    assert!(page.contains(&in_ops) && page.contains(&in_deploys), "{page}");
    assert!(page.contains(r#"href="/inbox/chats?page=1""#) && page.contains("choose a chat…"), "the chat is chosen a link away: {page}");
    assert!(!page.contains(r#"name="target""#), "no chat list on the first page: {page}");

    let (status, _, chats) = ana.get("/inbox/chats").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(title(&chats), "(2) Chats where requests wait for you");
    for chat in ["telegram%3A-100777", "telegram%3A-100778"] {
        assert!(chats.contains(&format!(r#"href="/inbox?target={chat}&amp;page=1""#)), "{chat}: {chats}");
    }

    let (_, _, page) = ana.get("/inbox?target=telegram%3A-100778&page=1").await;
    assert!(page.contains(&in_deploys) && !page.contains(&in_ops), "only the deploys chat's request: {page}");
    assert!(page.contains(r#"<input type="hidden" name="target" value="telegram:-100778">"#), "the choice rides along in the form: {page}");
    assert!(page.contains(r#"href="/inbox?page=1""#) && page.contains("any chat"), "and can be dropped: {page}");
    // The chats page keeps the other filters in its links.
    let (_, _, chats) = ana.get("/inbox/chats?age=5m&page=3").await;
    assert!(chats.contains(r#"href="/inbox?target=telegram%3A-100777&amp;age=5m&amp;page=1""#), "{chats}");

    let (_, _, page) = ana.get("/inbox?age=5m").await;
    assert!(!page.contains(&in_ops) && !page.contains(&in_deploys) && page.contains("Nothing is waiting for you."), "both were just pushed: {page}");
    assert_eq!(title(&page), "(2) Inbox", "the count is of everything waiting");

    let mallory = inbox.sign_in(&mallory()).await;
    let (status, _, chats) = mallory.get("/inbox/chats").await;
    assert_eq!(status, StatusCode::OK);
    assert!(!chats.contains("telegram:-1007") && !chats.contains("telegram%3A") && chats.contains("Nothing is waiting for you."), "{chats}");
    inbox.stop().await;
}

/// Every page carries the headers; the session cookie is HttpOnly, SameSite=Strict,
/// scoped to the inbox, and not Secure on plain http.
#[tokio::test]
async fn security_headers_and_cookie_flags() {
    let inbox = Inbox::start().await;
    let link = inbox.sign_in_link(&ana()).await;
    for url in [format!("{}/inbox", inbox.base), link.clone(), format!("{}/inbox/static/app.js", inbox.base)] {
        let response = inbox.http.get(&url).send().await.unwrap();
        let h = response.headers();
        let csp = h[CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'none'"), "{url}: {csp}");
        assert!(!csp.contains("unsafe-inline") && !csp.contains('*'), "{csp}");
        assert_eq!(h[X_FRAME_OPTIONS], "DENY");
        assert_eq!(h[REFERRER_POLICY], "no-referrer");
        assert_eq!(h[X_CONTENT_TYPE_OPTIONS], "nosniff");
    }
    let page = inbox.http.get(format!("{}/inbox", inbox.base)).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(page.headers()[CACHE_CONTROL], "no-store");
    let text = page.text().await.unwrap();
    assert!(text.contains("send /web to the bot") && text.contains("hitl-bridge web login"), "how to sign in: {text}");
    assert!(!text.contains("<script>") && text.contains(r#"<script src="/inbox/static/app.js" defer></script>"#), "no inline script: {text}");

    let token = link.rsplit('/').next().unwrap();
    let response = inbox.http.post(format!("{}/inbox/sign-in", inbox.base)).form(&[("token", token)]).send().await.unwrap();
    let cookie = response.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    assert!(cookie.starts_with("hitl_inbox=") && cookie.contains("; Path=/inbox; HttpOnly; SameSite=Strict"), "{cookie}");
    assert!(!cookie.contains("Secure"), "plain http: {cookie}");
    let value = cookie.split(';').next().unwrap().trim_start_matches("hitl_inbox=");
    assert_eq!(value.len(), 64, "256 random bits");
    inbox.stop().await;
}

/// Behind an https `web.public_url` (a proxy with a path in front), the session cookie
/// is `Secure` and scoped to the inbox under that path, and signing out clears it with
/// the same flags.
#[tokio::test]
async fn the_cookie_is_secure_on_an_https_public_url() {
    let inbox = Inbox::start_with(&[("web.public_url", "https://ops.example.com/bridge")]).await;
    let store = inbox.store().await;
    let link = hitl_bridge::web::sign_in_link(&store, &inbox.harness.settings.web, &person(&ana())).await.expect("link");
    store.close().await;
    assert!(link.starts_with("https://ops.example.com/bridge/inbox/sign-in/"), "{link}");
    let token = link.rsplit('/').next().unwrap();
    let response = inbox.http.post(format!("{}/inbox/sign-in", inbox.base)).form(&[("token", token)]).send().await.unwrap();
    assert_eq!(response.headers()["location"], "/bridge/inbox");
    let cookie = response.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    let value = cookie.split(';').next().unwrap().to_owned();
    assert_eq!(cookie, format!("{value}; Path=/bridge/inbox; HttpOnly; SameSite=Strict; Secure"));
    let ana = support::web_inbox::Session { inbox: &inbox, cookie: value };
    let csrf = ana.csrf().await;
    let (status, headers, _) = ana.post("/inbox/sign-out", &[("csrf", &csrf)]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers[SET_COOKIE], "hitl_inbox=; Path=/bridge/inbox; HttpOnly; SameSite=Strict; Secure; Max-Age=0");
    inbox.stop().await;
}

/// A link's page does not spend it (previews, scanners); its button does, once. A link
/// past its ten minutes, and a made-up one, sign nobody in.
#[tokio::test]
async fn sign_in_links_work_once_and_expire() {
    let inbox = Inbox::start().await;
    let link = inbox.sign_in_link(&ana()).await;
    for _ in 0..2 {
        let page = inbox.http.get(&link).send().await.unwrap();
        assert_eq!(page.status(), StatusCode::OK);
        let text = page.text().await.unwrap();
        assert!(text.contains(">Sign in</button>") && text.contains("Ana (telegram:3003)"), "{text}");
    }
    let token = link.rsplit('/').next().unwrap().to_owned();
    let spend = || inbox.http.post(format!("{}/inbox/sign-in", inbox.base)).form(&[("token", token.clone())]).send();
    // Another site's page posting the link (login CSRF) is refused and spends nothing.
    let cross =
        inbox.http.post(format!("{}/inbox/sign-in", inbox.base)).header("sec-fetch-site", "cross-site").form(&[("token", token.clone())]).send().await.unwrap();
    assert_eq!(cross.status(), StatusCode::FORBIDDEN);
    assert!(cross.headers().get(SET_COOKIE).is_none());
    let first = spend().await.unwrap();
    assert_eq!(first.status(), StatusCode::SEE_OTHER);
    assert!(support::web_inbox::session_cookie(first.headers()).is_some());
    let again = spend().await.unwrap();
    assert_eq!(again.status(), StatusCode::GONE);
    assert!(again.headers().get(SET_COOKIE).is_none());
    assert!(again.text().await.unwrap().contains("has been used, has expired, or is unknown"));
    assert_eq!(inbox.http.get(&link).send().await.unwrap().status(), StatusCode::GONE, "a spent link's page says so");

    // A link made eleven minutes ago (the store keeps the token's SHA-256 only).
    let old = "0f".repeat(32);
    let store = inbox.store().await;
    let now = hitl_bridge::clock::now_ms();
    let hash = hex::encode(Sha256::digest(old.as_bytes()));
    store.create_sign_in_link(&hash, &person(&ana()), now - 660_000, now - 60_000).await.unwrap();
    store.close().await;
    assert_eq!(inbox.http.get(format!("{}/inbox/sign-in/{old}", inbox.base)).send().await.unwrap().status(), StatusCode::GONE);
    let expired = inbox.http.post(format!("{}/inbox/sign-in", inbox.base)).form(&[("token", old.as_str())]).send().await.unwrap();
    assert_eq!(expired.status(), StatusCode::GONE);
    let made_up = inbox.http.post(format!("{}/inbox/sign-in", inbox.base)).form(&[("token", "f".repeat(64))]).send().await.unwrap();
    assert_eq!(made_up.status(), StatusCode::GONE);
    inbox.stop().await;
}

/// A decision posted without the session's CSRF token, or with another session's, is
/// refused and changes nothing.
#[tokio::test]
async fn a_post_without_its_csrf_token_is_refused() {
    let inbox = Inbox::start().await;
    let id = inbox.push(trade("web-csrf")).await;
    let ana = inbox.sign_in(&ana()).await;
    let minh = inbox.sign_in(&minh()).await;
    let (ana_csrf, minh_csrf) = (ana.csrf().await, minh.csrf().await);
    assert_ne!(ana_csrf, minh_csrf, "one token per session");
    let path = format!("/inbox/requests/{id}/decide");
    for fields in [
        vec![("action", "0"), ("decision", "approve")],
        vec![("csrf", ""), ("action", "0"), ("decision", "approve")],
        vec![("csrf", minh_csrf.as_str()), ("action", "0"), ("decision", "approve")],
    ] {
        let (status, _, page) = ana.post(&path, &fields).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{fields:?}");
        assert!(page.contains("no longer valid"), "{page}");
    }
    let (status, _, _) = ana.post("/inbox/sign-out", &[]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "signing out is a form too");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(inbox.agent_view("web-csrf").await["status"], "pending");
    inbox.stop().await;
}

/// Mallory is no approver: the inbox shows her nothing, the request's URL says no such
/// request, and a decision posted to it is refused by the engine (and audited) while
/// the request stays pending.
#[tokio::test]
async fn someone_who_may_not_answer_sees_nothing_and_cannot_decide_by_url() {
    let inbox = Inbox::start().await;
    let id = inbox.push(trade("web-deny")).await;
    let mallory = inbox.sign_in(&mallory()).await;
    let (_, _, page) = mallory.get("/inbox").await;
    assert_eq!(title(&page), "(0) Inbox");
    assert!(!page.contains(&id) && !page.contains("execute_trade"), "{page}");
    let (status, _, page) = mallory.get(&format!("/inbox/requests/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(page.contains("No such request is waiting for you.") && !page.contains("execute_trade"), "{page}");
    let (status, _, _) = mallory.get("/inbox/requests/no-such-id").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "the same answer whether it exists or not");
    let (status, _, _) = mallory.get("/inbox/audit").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "the audit log is for approvers");

    let csrf = mallory.csrf().await;
    let (status, _, page) = mallory.post(&format!("/inbox/requests/{id}/decide"), &[("csrf", &csrf), ("action", "0"), ("decision", "approve")]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(!page.contains("execute_trade"));
    let store = inbox.store().await;
    let refused = support::wait_until(|| async { store.audit_log("web-deny").await.unwrap().into_iter().find(|e| e.outcome == "refused") }).await;
    assert_eq!(refused.actor.as_ref().map(|a| (a.user_id.as_str(), a.channel.as_deref())), Some(("6666", Some("web"))));
    store.close().await;
    assert_eq!(inbox.agent_view("web-deny").await["status"], "pending");
    inbox.stop().await;
}

/// Markup in action names, descriptions, arguments, context and question texts is
/// shown as text, never parsed.
#[tokio::test]
async fn markup_from_the_agent_renders_as_text() {
    let inbox = Inbox::start().await;
    let evil = r#""><img src=x onerror=alert(1)>"#;
    let script = "<script>alert(1)</script>";
    let approval = inbox
        .push(json!({
            "approval_key": "web-xss", "text": script,
            "actions": [{"name": format!("run{script}"), "args": {"cmd": evil, "multi": format!("{script}\n{evil}")}, "description": evil}]
        }))
        .await;
    let question = inbox
        .push(json!({"approval_key": "web-xss-q", "questions": [{"question": format!("Pick {script}"), "header": evil, "options": [{"label": evil}, {"label": script}]}]}))
        .await;
    let ana = inbox.sign_in(&ana()).await;
    for page in [ana.get("/inbox").await.2, ana.get(&format!("/inbox/requests/{approval}")).await.2, ana.get(&format!("/inbox/requests/{question}")).await.2] {
        assert!(!page.contains("<img") && !page.contains("<script>alert"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{page}");
    }
    let (_, _, page) = ana.get(&format!("/inbox/requests/{approval}")).await;
    assert!(page.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"), "{page}");
    inbox.stop().await;
}

/// Sessions are in the store: a restart keeps them. Signing out ends one.
#[tokio::test]
async fn sessions_survive_a_restart_and_sign_out_ends_them() {
    let mut inbox = Inbox::start().await;
    let cookie = inbox.sign_in(&ana()).await.cookie;
    inbox.restart().await;
    let ana = support::web_inbox::Session { inbox: &inbox, cookie };
    let (status, _, page) = ana.get("/inbox").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains(">Sign out</button>"));
    let csrf = ana.csrf().await;
    let (status, headers, _) = ana.post("/inbox/sign-out", &[("csrf", &csrf)]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(headers[SET_COOKIE].to_str().unwrap().contains("Max-Age=0"));
    assert_eq!(ana.get("/inbox").await.0, StatusCode::UNAUTHORIZED, "the old cookie signs nobody in");
    inbox.stop().await;
}

/// Edit: invalid JSON is refused in place with the parser's message and the text as
/// typed, nothing is sent; valid JSON goes to the agent as the edited args.
#[tokio::test]
async fn edit_refuses_invalid_json_in_place_then_sends_valid_json() {
    let inbox = Inbox::start().await;
    let id = inbox.push(trade("web-edit")).await;
    let ana = inbox.sign_in(&ana()).await;
    let (_, _, page) = ana.get(&format!("/inbox/requests/{id}?edit=0")).await;
    assert!(page.contains(r#"<textarea class="editor""#) && page.contains("&quot;quantity&quot;: 100"), "prefilled: {page}");
    let csrf = ana.csrf().await;
    let path = format!("/inbox/requests/{id}/decide");
    let (status, _, page) = ana.post(&path, &[("csrf", &csrf), ("action", "0"), ("decision", "edit"), ("json", r#"{"symbol": "VNM", "quantity": }"#)]).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.contains("Not sent: this is not valid JSON: expected value at line 1 column"), "{page}");
    assert!(page.contains("&quot;quantity&quot;: }</textarea>"), "the text as typed: {page}");
    assert_eq!(inbox.agent_view("web-edit").await["status"], "pending");
    let (status, _, _) = ana.post(&path, &[("csrf", &csrf), ("action", "0"), ("decision", "edit"), ("json", r#"{"symbol": "VNM", "quantity": 50}"#)]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let state = inbox.decided("web-edit").await;
    assert_eq!(state["reply"]["decisions"][0]["type"], "edit");
    assert_eq!(state["reply"]["decisions"][0]["edited_action"]["args"], json!({"symbol": "VNM", "quantity": 50}));
    inbox.stop().await;
}

/// The first answer wins: a second approver deciding after the first is told who
/// decided, and nothing more is sent.
#[tokio::test]
async fn the_second_decision_is_told_who_was_first() {
    let inbox = Inbox::start().await;
    let id = inbox.push(trade("web-race")).await;
    let (ana, minh) = (inbox.sign_in(&ana()).await, inbox.sign_in(&minh()).await);
    let (ana_csrf, minh_csrf) = (ana.csrf().await, minh.csrf().await);
    let path = format!("/inbox/requests/{id}/decide");
    let approve = [("csrf", ana_csrf.as_str()), ("action", "0"), ("decision", "approve")];
    let reject = [("csrf", minh_csrf.as_str()), ("action", "0"), ("decision", "reject"), ("text", "too big")];
    let (a, m) = tokio::join!(ana.post(&path, &approve), minh.post(&path, &reject));
    let mut statuses = [a.0, m.0];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::SEE_OTHER, StatusCode::CONFLICT], "one wins, one is told");
    let loser = if a.0 == StatusCode::CONFLICT { &a.2 } else { &m.2 };
    assert!(loser.contains("Already decided by "), "{loser}");
    let state = inbox.decided("web-race").await;
    let winner = if a.0 == StatusCode::SEE_OTHER { json!([{"type": "approve"}]) } else { json!([{"type": "reject", "message": "too big"}]) };
    assert_eq!(state["reply"]["decisions"], winner);
    inbox.stop().await;
}

/// Questions as one form: a multi-select with two options ticked and Other typed, a
/// single choice, a skipped question; the agent gets exactly those answers.
#[tokio::test]
async fn questions_form_with_multi_select_and_other() {
    let inbox = Inbox::start().await;
    let id = inbox
        .push(json!({"approval_key": "web-q", "questions": [
            {"question": "Which regions?", "header": "Regions", "multiSelect": true, "options": [{"label": "EU"}, {"label": "US"}, {"label": "JP"}]},
            {"question": "Window?", "options": [{"label": "Tonight"}, {"label": "Weekend"}]},
            {"question": "Notify whom?", "options": [{"label": "Nobody"}]}
        ]}))
        .await;
    let ana = inbox.sign_in(&ana()).await;
    let (_, _, page) = ana.get(&format!("/inbox/requests/{id}")).await;
    assert!(page.contains(r#"type="checkbox" id="q0-o0" name="q0" value="0""#) && page.contains(r#"type="radio" id="q1-o1" name="q1" value="1""#), "{page}");
    assert!(page.contains(r#"<label for="q0-other">Other (type your answer)</label>"#), "{page}");
    let csrf = ana.csrf().await;
    let fields = [("csrf", csrf.as_str()), ("q0", "0"), ("q0", "1"), ("q0.other", "APAC"), ("q1", "0"), ("q2.skip", "1")];
    let (status, _, page) = ana.post(&format!("/inbox/requests/{id}/answer"), &fields).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{page}");
    let state = inbox.decided("web-q").await;
    assert_eq!(state["reply"]["answers"], json!({"Which regions?": "EU, US, APAC", "Window?": "Tonight", "Notify whom?": "[No preference]"}));
    inbox.stop().await;
}

/// `hitl-bridge web login telegram:USER_ID` beside the running bridge: the URL alone on
/// stdout, and it signs that person in. With the inbox off it says so.
#[tokio::test]
async fn web_login_prints_a_link_that_signs_in() {
    let inbox = Inbox::start().await;
    let run = |enabled: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_hitl-bridge"))
            .args(["web", "login", "telegram:3003", "--name", "Ana"])
            .env("HITL_BRIDGE__STORE__URL", &inbox.harness.settings.store.url)
            .env("HITL_BRIDGE__WEB__ENABLED", enabled)
            .env("HITL_BRIDGE__WEB__PUBLIC_URL", support::web_inbox::PUBLIC_URL)
            .env("HITL_BRIDGE__BACKEND__URL", "ws://127.0.0.1:9/ws/{session_id}")
            .output()
            .expect("runs")
    };
    let out = run("true");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let line = stdout.strip_suffix('\n').expect("one line");
    assert!(!line.contains('\n'), "{stdout}");
    assert!(line.starts_with("http://inbox.example/inbox/sign-in/") && line.len() == "http://inbox.example/inbox/sign-in/".len() + 64, "{line}");
    let page = inbox.http.get(inbox.local(line)).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().await.unwrap().contains("Ana (telegram:3003)"));

    let off = run("false");
    assert!(!off.status.success());
    assert!(String::from_utf8_lossy(&off.stderr).contains("web.enabled = true"), "{}", String::from_utf8_lossy(&off.stderr));
    inbox.stop().await;
}

/// Live updates: an open `/inbox/events` stream says `change` when a request is pushed
/// and again when it is decided (here in chat); without a session there is no stream.
#[tokio::test]
async fn the_event_stream_announces_new_and_decided_requests() {
    let inbox = Inbox::start().await;
    let ana_session = inbox.sign_in(&ana()).await;
    let anonymous = inbox.http.get(format!("{}/inbox/events", inbox.base)).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let mut stream = inbox.http.get(format!("{}/inbox/events", inbox.base)).header("cookie", &ana_session.cookie).send().await.unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    // The first mark the watcher reads for a new watcher is a change: what happened
    // since the page was rendered is fetched.
    let event = String::from_utf8(next_chunk(&mut stream).await).unwrap();
    assert_eq!(event, "event: change\ndata: 1\n\n");
    inbox.push(trade("web-live")).await;
    let event = String::from_utf8(next_chunk(&mut stream).await).unwrap();
    assert_eq!(event, "event: change\ndata: 2\n\n");
    let card = inbox.tg_message("execute_trade").await;
    let data = support::fake_telegram::button(&card, "Approve");
    inbox.tg().push_click(support::web_inbox::OPS, &minh(), card["message_id"].as_i64().unwrap(), &data);
    let event = String::from_utf8(next_chunk(&mut stream).await).unwrap();
    assert_eq!(event, "event: change\ndata: 3\n\n");
    inbox.stop().await;
}

async fn next_chunk(stream: &mut reqwest::Response) -> Vec<u8> {
    let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), stream.chunk()).await.expect("an event within 10 s");
    chunk.expect("readable").expect("still open").to_vec()
}

/// A quorum of two: Ana's approval from the browser is a vote. Her page shows "1 of 2"
/// with her name, her inbox no longer lists it (she has voted), Minh's does; his vote
/// decides it.
#[tokio::test]
async fn a_quorum_vote_from_the_browser() {
    let inbox = Inbox::start().await;
    let mut body = trade("web-quorum");
    body["policy"] = json!({"approvers": ["telegram:3003", "telegram:4004"], "quorum": 2});
    let id = inbox.push(body).await;
    let (ana, minh) = (inbox.sign_in(&ana()).await, inbox.sign_in(&minh()).await);
    let csrf = ana.csrf().await;
    let path = format!("/inbox/requests/{id}/decide");
    let (status, _, _) = ana.post(&path, &[("csrf", &csrf), ("action", "0"), ("decision", "approve")]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, _, page) = ana.get(&format!("/inbox/requests/{id}")).await;
    assert!(page.contains("1 of 2 approvals") && page.contains("Votes: Ana"), "{page}");
    assert!(!page.contains(">Approve</button>"), "she has voted: {page}");
    assert_eq!(title(&ana.get("/inbox").await.2), "(0) Inbox");
    assert_eq!(title(&minh.get("/inbox").await.2), "(1) Inbox");
    assert_eq!(inbox.agent_view("web-quorum").await["status"], "pending");
    let csrf = minh.csrf().await;
    let (status, _, _) = minh.post(&path, &[("csrf", &csrf), ("action", "0"), ("decision", "approve")]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(inbox.decided("web-quorum").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    inbox.stop().await;
}

/// The pages speak the browser's language among the bridge's three.
#[tokio::test]
async fn pages_follow_the_browsers_language() {
    let inbox = Inbox::start().await;
    let ana = inbox.sign_in(&ana()).await;
    for (language, inbox_word, sign_out) in [("vi-VN,vi;q=0.9", "Hộp chờ duyệt", "Đăng xuất"), ("zh-CN", "待办", "退出登录"), ("fr", "Inbox", "Sign out")]
    {
        let response = inbox.http.get(format!("{}/inbox", inbox.base)).header("cookie", &ana.cookie).header("accept-language", language).send().await.unwrap();
        let page = response.text().await.unwrap();
        assert_eq!(title(&page), format!("(0) {inbox_word}"), "{language}");
        assert!(page.contains(&format!(">{sign_out}</button>")), "{language}: {page}");
    }
    inbox.stop().await;
}
