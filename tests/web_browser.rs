//! The web inbox in a real browser: Debian's `chromium`, driven headless over
//! WebDriver by `chromium-driver` (`.ci/run` installs both; without them these tests
//! are ignored, as the PostgreSQL ones are without a server). Buttons are found by
//! their accessible names, as a screen reader names them. The request page's
//! screenshot in docs/ is taken here (`HITL_BRIDGE_WEB_SCREENSHOT=docs/web-request.png`).

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::fake_telegram;
use support::wait_until;
use support::web_inbox::{Inbox, OPS, ana, minh};
use support::webdriver::{Browser, Driver};

fn migration(key: &str) -> Value {
    let diff = "--- a/migrations/0042_orders.sql\n+++ b/migrations/0042_orders.sql\n@@ -1,3 +1,4 @@\n CREATE TABLE orders (\n-    id INTEGER PRIMARY KEY\n+    id BIGINT PRIMARY KEY,\n+    placed_at TIMESTAMPTZ NOT NULL\n );";
    json!({
        "approval_key": key, "session_id": "deploy-12", "timeout_seconds": 900,
        "text": "Release 4.2: apply the orders migration on production.",
        "actions": [{"name": "apply_migration", "description": "Widen orders.id and add placed_at",
                     "args": {"database": "orders-prod", "dry_run": false, "patch": diff}}],
        "review_configs": [{"action_name": "apply_migration", "allowed_decisions": ["approve", "edit", "reject"]}]
    })
}

/// Ana signs in with her link in the browser. The inbox updates live when a request is
/// pushed (no reload); she opens it, approves it with the Approve button: the agent
/// gets the approval and the Telegram card locks with her name.
#[tokio::test]
#[ignore = "needs chromium and chromium-driver (apt-get install chromium chromium-driver); .ci/run installs them"]
async fn sign_in_see_it_live_and_approve_in_chromium() {
    let inbox = Inbox::start().await;
    let driver = Driver::start().await;
    let browser = driver.browser(1100, 1400).await;
    browser.goto(&inbox.sign_in_link(&ana()).await).await;
    let sign_in = browser.button("Sign in", 0).await;
    browser.click(&sign_in).await;
    wait_until(|| async { (browser.title().await == "(0) Inbox").then_some(()) }).await;
    browser.wait_text("Nothing is waiting for you.").await;

    // Pushed while the page is open: it appears without a reload.
    browser.run("window.__same_page = true; return 1;").await;
    let id = inbox.push(migration("mig-1")).await;
    wait_until(|| async { (browser.title().await == "(1) Inbox").then_some(()) }).await;
    browser.wait_text("apply_migration").await;
    assert_eq!(browser.run("return window.__same_page === true;").await, json!(true), "updated in place, not reloaded");

    browser.click(&browser.find(&format!("a[href='/inbox/requests/{id}']")).await).await;
    browser.wait_text("Widen orders.id").await;
    let diff = browser.text(&browser.find("pre.diff span.add").await).await;
    assert_eq!(diff, "+    id BIGINT PRIMARY KEY,", "the patch is shown as a diff");
    for name in ["Approve", "Edit", "Reject", "Comment"] {
        browser.button(name, 0).await;
    }
    let card = inbox.tg_message("apply_migration").await;
    if let Ok(path) = std::env::var("HITL_BRIDGE_WEB_SCREENSHOT") {
        browser.goto(&format!("{}/inbox/requests/{id}", inbox.base)).await;
        browser.wait_text("telegram:-100777").await;
        std::fs::write(&path, browser.screenshot().await).expect("screenshot written");
    }
    browser.click(&browser.button("Approve", 0).await).await;
    browser.wait_text("Ana").await;
    let state = inbox.decided("mig-1").await;
    assert_eq!(state["reply"], json!({"decisions": [{"type": "approve"}]}));
    inbox.tg_locked(card["message_id"].as_i64().unwrap(), "Ana").await;
    assert!(browser.all("button").await.len() == 1, "only Sign out is left");
    browser.close().await;
    inbox.stop().await;
}

/// Edit: the editor opens prefilled; invalid JSON is refused in place with the
/// parser's message; valid JSON is sent as the edited arguments.
#[tokio::test]
#[ignore = "needs chromium and chromium-driver (apt-get install chromium chromium-driver); .ci/run installs them"]
async fn edit_with_invalid_then_valid_json_in_chromium() {
    let inbox = Inbox::start().await;
    let id = inbox.push(migration("mig-edit")).await;
    let driver = Driver::start().await;
    let browser = signed_in(&inbox, &driver, &ana()).await;
    browser.goto(&format!("{}/inbox/requests/{id}", inbox.base)).await;
    browser.click(&browser.button("Edit", 0).await).await;
    let editor = browser.find("textarea.editor").await;
    assert_eq!(browser.label(&editor).await, "Arguments (JSON)");
    let prefilled = browser.run("return document.querySelector('textarea.editor').value;").await;
    let parsed: Value = serde_json::from_str(prefilled.as_str().unwrap()).expect("prefilled with the JSON");
    assert_eq!(parsed["database"], "orders-prod");
    browser.type_into(&editor, r#"{"database": "orders-prod", "dry_run": tru}"#).await;
    browser.click(&browser.button("Submit", 0).await).await;
    let text = browser.wait_text("Not sent: this is not valid JSON:").await;
    assert!(text.contains("expected ident at line 1 column"), "{text}");
    assert_eq!(inbox.agent_view("mig-edit").await["status"], "pending", "nothing was sent");
    let editor = browser.find("textarea.editor").await;
    browser.type_into(&editor, r#"{"database": "orders-prod", "dry_run": true}"#).await;
    browser.click(&browser.button("Submit", 0).await).await;
    let state = inbox.decided("mig-edit").await;
    assert_eq!(state["reply"]["decisions"][0]["edited_action"]["args"], json!({"database": "orders-prod", "dry_run": true}));
    browser.close().await;
    inbox.stop().await;
}

/// A multi-select question answered with two boxes ticked (by their labels) and Other
/// typed, on a phone-sized window.
#[tokio::test]
#[ignore = "needs chromium and chromium-driver (apt-get install chromium chromium-driver); .ci/run installs them"]
async fn multi_select_with_other_on_a_phone_in_chromium() {
    let inbox = Inbox::start().await;
    let id = inbox
        .push(json!({"approval_key": "q-phone", "questions": [
            {"question": "Which regions?", "header": "Regions", "multiSelect": true, "options": [{"label": "EU"}, {"label": "US"}, {"label": "JP"}]}
        ]}))
        .await;
    let driver = Driver::start().await;
    let browser = signed_in_sized(&inbox, &driver, &ana(), 390, 844).await;
    browser.goto(&format!("{}/inbox/requests/{id}", inbox.base)).await;
    browser.click(&browser.find("label[for='q0-o0']").await).await;
    browser.click(&browser.find("label[for='q0-o2']").await).await;
    let other = browser.find("#q0-other").await;
    assert_eq!(browser.label(&other).await, "Other (type your answer)");
    browser.type_into(&other, "APAC").await;
    let width = browser.run("return document.querySelector('form.questions button').getBoundingClientRect().width;").await;
    assert!(width.as_f64().unwrap() > 300.0, "one column: the button spans the phone's width ({width})");
    browser.click(&browser.button("Submit", 0).await).await;
    let state = inbox.decided("q-phone").await;
    assert_eq!(state["reply"]["answers"], json!({"Which regions?": "EU, JP, APAC"}));
    browser.close().await;
    inbox.stop().await;
}

/// Two approvers in two browsers press at once: one decision goes to the agent, the
/// other browser is told who was first.
#[tokio::test]
#[ignore = "needs chromium and chromium-driver (apt-get install chromium chromium-driver); .ci/run installs them"]
async fn two_browsers_racing_in_chromium() {
    let inbox = Inbox::start().await;
    let id = inbox.push(migration("mig-race")).await;
    let driver = Driver::start().await;
    let (a, m) = (signed_in(&inbox, &driver, &ana()).await, signed_in(&inbox, &driver, &minh()).await);
    let url = format!("{}/inbox/requests/{id}", inbox.base);
    a.goto(&url).await;
    m.goto(&url).await;
    let (approve, reject) = (a.button("Approve", 0).await, m.button("Reject", 0).await);
    tokio::join!(a.click(&approve), m.click(&reject));
    let state = inbox.decided("mig-race").await;
    let (winner, loser) = if state["reply"]["decisions"][0]["type"] == "approve" { ("Ana", &m) } else { ("Minh", &a) };
    let told = loser.wait_text("Already decided by").await;
    assert!(told.contains(&format!("Already decided by {winner}")), "{told}");
    a.close().await;
    m.close().await;
    inbox.stop().await;
}

/// Decided in chat while the page is open: the page shows it without a reload, and
/// its buttons go.
#[tokio::test]
#[ignore = "needs chromium and chromium-driver (apt-get install chromium chromium-driver); .ci/run installs them"]
async fn an_answer_in_chat_updates_the_open_page_in_chromium() {
    let inbox = Inbox::start().await;
    let id = inbox.push(migration("mig-chat")).await;
    let driver = Driver::start().await;
    let browser = signed_in(&inbox, &driver, &ana()).await;
    browser.goto(&format!("{}/inbox/requests/{id}", inbox.base)).await;
    browser.button("Approve", 0).await;
    browser.run("window.__same_page = true; return 1;").await;
    let card = inbox.tg_message("apply_migration").await;
    let data = fake_telegram::button(&card, "Reject");
    inbox.tg().push_click(OPS, &minh(), card["message_id"].as_i64().unwrap(), &data);
    inbox.decided("mig-chat").await;
    wait_until(|| async { (browser.all("button").await.len() == 1).then_some(()) }).await;
    browser.wait_text("Minh").await;
    assert_eq!(browser.run("return window.__same_page === true;").await, json!(true));
    browser.close().await;
    inbox.stop().await;
}

/// Markup from the agent is text in the browser too: no element is made from it and
/// no handler runs.
#[tokio::test]
#[ignore = "needs chromium and chromium-driver (apt-get install chromium chromium-driver); .ci/run installs them"]
async fn markup_stays_text_in_chromium() {
    let inbox = Inbox::start().await;
    let evil = r#""><img src=x onerror="window.__xss=1">"#;
    let id = inbox
        .push(json!({"approval_key": "xss", "text": "<script>window.__xss=2</script>",
            "actions": [{"name": "<script>window.__xss=3</script>", "args": {"q": evil}, "description": evil}]}))
        .await;
    let driver = Driver::start().await;
    let browser = signed_in(&inbox, &driver, &ana()).await;
    browser.goto(&format!("{}/inbox/requests/{id}", inbox.base)).await;
    let text = browser.wait_text("<script>window.__xss=3</script>").await;
    assert!(text.contains(evil), "{text}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(browser.run("return [window.__xss === undefined, document.images.length];").await, json!([true, 0]));
    browser.close().await;
    inbox.stop().await;
}

async fn signed_in(inbox: &Inbox, driver: &Driver, user: &fake_telegram::User) -> Browser {
    signed_in_sized(inbox, driver, user, 1100, 1000).await
}

async fn signed_in_sized(inbox: &Inbox, driver: &Driver, user: &fake_telegram::User, width: u32, height: u32) -> Browser {
    let browser = driver.browser(width, height).await;
    browser.goto(&inbox.sign_in_link(user).await).await;
    browser.click(&browser.button("Sign in", 0).await).await;
    wait_until(|| async { browser.title().await.ends_with(") Inbox").then_some(()) }).await;
    browser
}
