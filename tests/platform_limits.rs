//! Platform hard limits and Telegram start-up failures. End to end on the fake Bot
//! API: a question with 300 options is paged (never one keyboard over 100 buttons),
//! the fake refuses what Telegram refuses, and a bridge whose Telegram cannot start
//! says so instead of retrying forever; polling confirms an update only once it was
//! handled. Render checks: 30 actions paged on Telegram,
//! 300 options within Discord's select and row limits.

use support::fake_telegram;
mod support;

use std::time::Duration;

use fake_telegram::{FakeTelegram, User, button, callback_data};
use hitl_bridge::app::App;
use hitl_bridge::config::Settings;
use serde_json::{Value, json};
use support::{Chat, Harness, wait_until};

const OPS: i64 = -100_777;
const SECRET: &str = "ci-secret";

fn ana() -> User {
    User::new(3003, "Ana", Some("en"))
}

fn no_console() -> Option<(tokio::io::BufReader<tokio::io::Empty>, tokio::io::Sink)> {
    None
}

fn buttons(message: &Value) -> usize {
    message["reply_markup"]["inline_keyboard"].as_array().map_or(0, |rows| rows.iter().map(|r| r.as_array().map_or(0, Vec::len)).sum())
}

/// Labels of the option buttons a message shows (`Option N`).
fn option_labels(message: &Value) -> Vec<String> {
    message["reply_markup"]["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["text"].as_str().map(str::to_owned))
        .filter(|t| t.contains("Option "))
        .collect()
}

/// 300 options pushed over the HTTP API to a Telegram group: 12 pages of 25, each
/// keyboard within Telegram's limits (the fake refuses more than 100 buttons); ▶
/// turns pages, an option on page 12 is selected, the choice is what the agent gets.
#[tokio::test]
async fn three_hundred_options_are_paged() {
    let mut h = Harness::on(Chat::Telegram)
        .no_agent()
        .tweak(|settings| {
            settings.http.api_tokens = vec![format!("ci:{SECRET}")];
            settings.access.users = vec!["telegram:3003".into()];
        })
        .build()
        .await;
    h.telegram().group(OPS, "ops", false);
    h.boot().await;
    let tg = h.telegram();
    let base = format!("http://{}", h.app().http_addr().expect("http"));
    let http = reqwest::Client::new();

    let options: Vec<Value> = (1..=300).map(|n| json!({"label": format!("Option {n}")})).collect();
    let body = json!({"approval_key": "big-1", "targets": [{"platform": "telegram", "chat_id": OPS.to_string()}],
        "questions": [{"question": "Which server?", "header": "Server", "options": options}]});
    let pushed = http.post(format!("{base}/v1/requests")).bearer_auth(SECRET).json(&body).send().await.expect("push");
    assert!(pushed.status().is_success(), "{}", pushed.text().await.unwrap_or_default());

    let shown = wait_until(|| async { tg.bot_messages(OPS).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains("Which server?"))) }).await;
    let id = shown["message_id"].as_i64().expect("id");
    assert!(buttons(&shown) <= 100, "{} buttons", buttons(&shown));
    let first: Vec<String> = (1..=25).map(|n| format!("Option {n}")).collect();
    assert_eq!(option_labels(&shown), first);
    assert!(shown["text"].as_str().unwrap().contains("<i>1/12</i>"), "{}", shown["text"]);
    assert!(shown["text"].as_str().unwrap().contains("25. Option 25"));
    assert!(!shown["text"].as_str().unwrap().contains("26. Option 26"), "only this page's options are listed");

    // Turn to the last page, one ▶ at a time.
    for page in 2..=12 {
        let current = tg.message(OPS, id).expect("message");
        let data = button(&current, &format!("{page}/12 ▶"));
        let query = tg.push_click(OPS, &ana(), id, &data);
        wait_until(|| async { tg.answer_to(&query) }).await;
        let turned =
            wait_until(|| async { tg.message(OPS, id).filter(|m| m["text"].as_str().is_some_and(|t| t.contains(&format!("<i>{page}/12</i>")))) }).await;
        assert!(buttons(&turned) <= 100);
        let expected: Vec<String> = ((page - 1) * 25 + 1..=(page * 25).min(300)).map(|n| format!("Option {n}")).collect();
        assert_eq!(option_labels(&turned), expected, "page {page}");
    }
    let last = tg.message(OPS, id).expect("message");
    assert!(callback_data(&last["reply_markup"]).len() <= 100);
    assert!(!last["text"].as_str().unwrap().contains("12/12 ▶") && button(&last, "◀ 11/12").len() <= 64);
    // Option 287 is on page 12; selecting it answers the only question.
    let query = tg.push_click(OPS, &ana(), id, &button(&last, "Option 287"));
    wait_until(|| async { tg.answer_to(&query) }).await;
    let summary = wait_until(|| async { tg.message(OPS, id).filter(|m| m["text"].as_str().is_some_and(|t| t.contains("→ Option 287"))) }).await;
    let query = tg.push_click(OPS, &ana(), id, &button(&summary, "Submit"));
    wait_until(|| async { tg.answer_to(&query) }).await;
    let decided = wait_until(|| async {
        let r = http.get(format!("{base}/v1/requests/big-1?wait=5")).bearer_auth(SECRET).send().await.ok()?;
        let body: Value = r.json().await.ok()?;
        (body["status"] == "resolved").then_some(body)
    })
    .await;
    assert_eq!(decided["reply"]["answers"], json!({"Which server?": "Option 287"}));
    h.stop_bridge().await;
    let tg = h.telegram();
    assert!(tg.errors().is_empty(), "the fake refused: {:?}", tg.errors());
    h.shutdown().await;
}

/// The fake refuses a keyboard Telegram would refuse, with Telegram's 400.
#[tokio::test]
async fn fake_refuses_more_than_100_buttons_or_8_per_row() {
    let tg = FakeTelegram::start().await;
    tg.group(OPS, "ops", false);
    let http = reqwest::Client::new();
    let url = format!("{}/bot{}/sendMessage", tg.url, fake_telegram::TOKEN);
    let button = |n: usize| json!({"text": format!("b{n}"), "callback_data": format!("d{n}")});
    let send = |rows: Vec<Vec<Value>>| {
        let http = http.clone();
        let url = url.clone();
        async move {
            let body = json!({"chat_id": OPS, "text": "x", "reply_markup": {"inline_keyboard": rows}});
            http.post(&url).json(&body).send().await.expect("post").json::<Value>().await.expect("json")
        }
    };
    let hundred_and_one: Vec<Vec<Value>> = (0..101).map(|n| vec![button(n)]).collect();
    let refused = send(hundred_and_one).await;
    assert_eq!(refused, json!({"ok": false, "error_code": 400, "description": "Bad Request: reply markup is too long"}));
    let wide = send(vec![(0..9).map(button).collect()]).await;
    assert_eq!(wide["error_code"], 400);
    let hundred: Vec<Vec<Value>> = (0..100).map(|n| vec![button(n)]).collect();
    assert_eq!(send(hundred).await["ok"], true);
    tg.shutdown();
}

fn telegram_settings(dir: &tempfile::TempDir, api_url: &str, extra: &[(&str, &str)]) -> Settings {
    let store = format!("sqlite://{}", dir.path().join("bridge.db").display());
    let mut pairs = vec![
        ("store.url", store.as_str()),
        ("http.enabled", "false"),
        ("telegram.enabled", "true"),
        ("telegram.token", "123456:WRONG-token"),
        ("telegram.api_url", api_url),
    ];
    pairs.extend_from_slice(extra);
    Settings::from_pairs(&pairs).expect("settings")
}

/// An unreachable Telegram (nothing listens at `telegram.api_url`) stops the start
/// after the start-up retries with the real cause (the refused connection) and the key
/// that was set.
#[tokio::test]
async fn an_unreachable_telegram_names_the_cause_and_the_key_it_was_given() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr");
    let dir = tempfile::tempdir().expect("tempdir");
    let result = App::start(&telegram_settings(&dir, &format!("http://{closed}"), &[]), no_console()).await;
    let Err(e) = result else { panic!("the bridge started without Telegram") };
    let message = e.to_string();
    assert!(message.contains(&format!("http://{closed} (telegram.api_url)")), "{message}");
    assert!(message.to_lowercase().contains("connection refused"), "the cause, not just \"error sending request\": {message}");
}

/// A token Telegram refuses (401 on getMe) stops the start at once with an error
/// naming `telegram.token`; nothing is retried in the background.
#[tokio::test]
async fn a_refused_token_fails_the_start() {
    let tg = FakeTelegram::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let started = std::time::Instant::now();
    let result = App::start(&telegram_settings(&dir, &tg.url, &[]), no_console()).await;
    let Err(e) = result else { panic!("the bridge started with a refused token") };
    let message = e.to_string();
    assert!(message.contains("telegram.token"), "{message}");
    assert!(message.starts_with("cannot start telegram"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(5), "refused tokens are not retried");
    tg.shutdown();
}

/// A webhook port that is taken stops the start with an error naming it.
#[tokio::test]
async fn a_taken_webhook_port_fails_the_start() {
    let tg = FakeTelegram::start().await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let listen = taken.local_addr().expect("addr").to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let hook = format!("http://{listen}/hook");
    let settings = telegram_settings(
        &dir,
        &tg.url,
        &[("telegram.token", fake_telegram::TOKEN), ("telegram.mode", "webhook"), ("telegram.webhook_url", &hook), ("telegram.webhook_listen", &listen)],
    );
    let Err(e) = App::start(&settings, no_console()).await else { panic!("the bridge started on a taken port") };
    let message = e.to_string();
    assert!(message.contains(&format!("cannot listen on {listen}")), "{message}");
    assert!(message.contains("webhook"), "{message}");
    tg.shutdown();
}

/// The real binary: `run` with a refused token exits non-zero with the reason.
#[test]
fn run_exits_non_zero_on_a_refused_token() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let tg = rt.block_on(FakeTelegram::start());
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hitl-bridge"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("HITL_BRIDGE__")) {
        cmd.env_remove(key);
    }
    let out = cmd
        .args(["run"])
        .env("HITL_BRIDGE__STORE__URL", format!("sqlite://{}", dir.path().join("b.db").display()))
        .env("HITL_BRIDGE__HTTP__ENABLED", "false")
        .env("HITL_BRIDGE__TELEGRAM__ENABLED", "true")
        .env("HITL_BRIDGE__TELEGRAM__TOKEN", "123456:WRONG-token")
        .env("HITL_BRIDGE__TELEGRAM__API_URL", &tg.url)
        .output()
        .expect("run the binary");
    assert!(!out.status.success(), "exited 0");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("telegram.token"), "{stderr}");
    tg.shutdown();
}

fn request(actions: Vec<hitl_bridge::protocol::ActionRequest>) -> hitl_bridge::interaction::Interaction {
    use hitl_bridge::interaction::{Interaction, RequestBuilder, TimeoutDefaults};
    let request = RequestBuilder::start("S_1", actions, vec![], Some(600)).finish(TimeoutDefaults::default()).expect("request");
    Interaction::new("a1b2c3d4e5f6".into(), "S".into(), request, None, 0)
}

fn rows_of(keyboard: &teloxide::types::InlineKeyboardMarkup) -> Vec<Vec<String>> {
    let v = serde_json::to_value(keyboard).expect("json");
    v["inline_keyboard"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r.as_array().expect("row").iter().map(|b| b["text"].as_str().unwrap_or_default().to_owned()).collect())
        .collect()
}

/// 30 actions in one approval: 10 per page, ◀ ▶ between pages, Approve all / Reject
/// all / Submit on every page, never over 100 buttons or 8 per row.
#[test]
fn thirty_actions_are_paged_on_telegram() {
    use hitl_bridge::platform::kit::token::TokenSigner;
    use hitl_bridge::platform::locale::Locale;
    use hitl_bridge::platform::telegram::render::{pages, render_page};
    use hitl_bridge::platform::telegram::wizard::View;
    let actions = (1..=30)
        .map(|n| hitl_bridge::protocol::ActionRequest { name: format!("tool_{n}"), args: json!({"n": n}), description: None, tool_use_id: None })
        .collect();
    let i = request(actions);
    let signer = TokenSigner::new(b"secret");
    assert_eq!(pages(&i, 0), 3);
    for page in 0..3 {
        let rows = rows_of(&render_page(&i, View { step: 0, page }, Locale::En, &signer).keyboard);
        let total: usize = rows.iter().map(Vec::len).sum();
        assert!(total <= 100 && rows.iter().all(|r| r.len() <= 8), "page {page}: {rows:?}");
        let actions: Vec<&Vec<String>> = rows.iter().filter(|r| r.iter().any(|b| b.contains("Approve #"))).collect();
        assert_eq!(actions.len(), 10, "page {page}");
        assert!(actions[0][0].ends_with(&format!("#{}", page * 10 + 1)), "{:?}", actions[0]);
        assert!(rows.iter().any(|r| r.iter().any(|b| b.contains("Approve all"))), "page {page}");
        let nav: Vec<String> = rows.last().expect("rows").clone();
        let expected: Vec<String> = match page {
            0 => vec!["2/3 ▶".into()],
            1 => vec!["◀ 1/3".into(), "3/3 ▶".into()],
            _ => vec!["◀ 2/3".into()],
        };
        assert_eq!(nav, expected, "page {page}");
    }
    // A page past the end shows the last one.
    assert_eq!(render_page(&i, View { step: 0, page: 9 }, Locale::En, &signer), render_page(&i, View { step: 0, page: 2 }, Locale::En, &signer));
}

/// Discord: a question with 300 options renders one select of at most 25 options in
/// at most 5 rows (the rest of the list stays readable in the embed).
#[test]
fn three_hundred_options_stay_within_discords_limits() {
    use hitl_bridge::platform::discord::render::view;
    use hitl_bridge::platform::kit::token::TokenSigner;
    use hitl_bridge::platform::locale::Locale;
    let options: Vec<Value> = (1..=300).map(|n| json!({"label": format!("Option {n}")})).collect();
    let i = request(vec![hitl_bridge::protocol::ActionRequest {
        name: "ask_user_question".into(),
        args: json!({"questions": [{"question": "Which server?", "header": "Server", "options": options}]}),
        description: None,
        tool_use_id: None,
    }]);
    let v = view(&i, Locale::En, &TokenSigner::new(b"secret"), 0);
    let rows = serde_json::to_value(&v.components).expect("json");
    let rows = rows.as_array().expect("rows");
    assert!(!rows.is_empty() && rows.len() <= 5, "{} rows", rows.len());
    for row in rows {
        let components = row["components"].as_array().expect("components");
        assert!(components.len() <= 5);
        for c in components {
            if let Some(options) = c["options"].as_array() {
                assert!(options.len() <= 25, "{} options in one select", options.len());
                assert_eq!(options[0]["label"], "Option 1");
            }
        }
    }
}

/// Polling: an update is confirmed (the next getUpdates' offset) as soon as it is
/// stored, not once handled: here the reply to /help is held up by a 429 for 2 s, and
/// the next batch is asked for meanwhile. The update stays in the store's inbox until
/// its handling is done.
#[tokio::test]
async fn polling_confirms_an_update_once_stored_and_handles_it_after() {
    let tg = FakeTelegram::start().await;
    let chat = tg.private_chat(&ana());
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = telegram_settings(&dir, &tg.url, &[("telegram.token", fake_telegram::TOKEN)]);
    settings.access.users = vec!["telegram:3003".into()];
    let app = App::start(&settings, no_console()).await.expect("bridge starts");
    wait_until(|| async { (!tg.offsets().is_empty()).then_some(()) }).await;
    tg.throttle_next(1, 2);
    tg.push_message(chat, &ana(), "/help", None, None);
    let update_id = 1;
    wait_until(|| async { tg.offsets().contains(&Some(update_id + 1)).then_some(()) }).await;
    assert!(tg.calls("sendMessage").is_empty(), "confirmed while the reply is still held up");
    let inbox = hitl_bridge::store::Store::connect(&settings.store.url).await.unwrap();
    assert_eq!(inbox_rows(&inbox).await, 1, "stored until handled");
    wait_until(|| async { tg.bot_messages(chat).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains("/new"))) }).await;
    wait_until(|| async { (inbox_rows(&inbox).await == 0).then_some(()) }).await;
    app.stop().await;
    tg.shutdown();
}

async fn inbox_rows(store: &hitl_bridge::store::Store) -> i64 {
    store.platform_inbox("telegram").waiting().await.unwrap()
}

/// A backlog larger than Telegram hands out at once (getUpdates' `limit`: at most 100,
/// the default) arrives in batches, as from Telegram: here 150 people's /help, queued
/// while the bridge was down. Each batch is confirmed by the next poll's offset, and
/// every update is handled once: one reply each.
#[tokio::test]
async fn a_backlog_over_a_hundred_updates_arrives_in_batches_and_each_is_handled_once() {
    let tg = FakeTelegram::start().await;
    let people: Vec<User> = (0..150).map(|k| User { id: 5000 + k, first_name: format!("P{k}"), language_code: None }).collect();
    let chats: Vec<i64> = people.iter().map(|person| tg.private_chat(person)).collect();
    for (person, chat) in people.iter().zip(&chats) {
        tg.push_message(*chat, person, "/help", None, None);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = telegram_settings(&dir, &tg.url, &[("telegram.token", fake_telegram::TOKEN), ("telegram.rate_limits", "false")]);
    settings.access.users = people.iter().map(|person| format!("telegram:{}", person.id)).collect();
    let app = App::start(&settings, no_console()).await.expect("bridge starts");
    wait_until(|| async { chats.iter().all(|chat| !tg.bot_messages(*chat).is_empty()).then_some(()) }).await;
    let first_polls: Vec<Option<i64>> = tg.offsets().into_iter().take(3).collect();
    assert_eq!(first_polls, [None, Some(101), Some(151)], "a batch of 100, then the other 50");
    assert_eq!(tg.deliveries().len(), 150, "each update handed out once");
    tokio::time::sleep(Duration::from_millis(300)).await;
    for chat in &chats {
        assert_eq!(tg.bot_messages(*chat).len(), 1, "one reply in chat {chat}");
    }
    app.stop().await;
    tg.shutdown();
}
