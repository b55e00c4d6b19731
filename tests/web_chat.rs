//! The chat side of the web inbox (docs/web.md "Sign in from a chat", "Open in
//! browser"), on the fake Telegram, Discord and Slack: `/web` in a direct message answers
//! with a one-time sign-in link sent without a preview, that signs in once; in a group
//! it is refused; with the inbox off it says so. Every pending card links to its
//! request's page: a URL button for an https inbox, a line of text for plain http,
//! nothing once decided or when the inbox is off. The payloads are asserted as the
//! platforms receive them; the fakes refuse what Telegram and Discord refuse.

mod support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::discord_chat::{components, has_embed};
use support::fake_discord::{self, BOT_ID, CHANNEL_ID, FakeDiscord};
use support::fake_telegram::User;
use support::web_inbox::{Inbox, OPS, PUBLIC_URL, Session, ana, mallory, session_cookie};
use support::{Chat, Harness, wait_until};

const SIGN_IN_WORDS: &str = "🔑 Your sign-in link to the web inbox. It works once, within 10 minutes; do not pass it on.";
const DIRECT_ONLY: &str = "/web works in a direct message with the bot only: a sign-in link is personal.";
const INBOX_OFF: &str = "The web inbox is off on this bridge (web.enabled = false).";

fn trade(key: &str) -> Value {
    json!({
        "approval_key": key, "session_id": "desk-7", "text": "Nightly rebalance.", "timeout_seconds": 600,
        "actions": [{"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100}}],
        "review_configs": [{"action_name": "execute_trade", "allowed_decisions": ["approve", "reject"]}]
    })
}

/// The token of a sign-in link under `base`, checked to be 256 random bits in hex.
fn token_of<'a>(link: &'a str, base: &str) -> &'a str {
    let token = link.strip_prefix(&format!("{base}/inbox/sign-in/")).unwrap_or_else(|| panic!("not a sign-in link under {base}: {link}"));
    assert!(token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
    token
}

/// Posts the sign-in form with `token` to the bridge at `base`.
async fn spend(http: &reqwest::Client, base: &str, token: &str) -> reqwest::Response {
    http.post(format!("{base}/inbox/sign-in")).form(&[("token", token)]).send().await.expect("sign in")
}

/// The bot's first sendMessage to `chat`.
async fn sent_to(inbox: &Inbox, chat: i64) -> Value {
    wait_until(|| async { inbox.tg().calls("sendMessage").into_iter().find(|b| b["chat_id"] == json!(chat)) }).await
}

/// Every button of a Telegram message, flattened.
fn tg_buttons(message: &Value) -> Vec<Value> {
    message["reply_markup"]["inline_keyboard"].as_array().into_iter().flatten().flat_map(|row| row.as_array().cloned().unwrap_or_default()).collect()
}

// ---------------------------------------------------------------------------------
// Telegram.

/// `/web` in a private chat: the exact sendMessage (the link on its own line, HTML,
/// the preview disabled); the link's button signs Ana in once, a second use is gone.
#[tokio::test]
async fn telegram_web_in_a_direct_message_sends_a_link_that_signs_in_once() {
    let inbox = Inbox::start().await;
    let chat = inbox.tg().private_chat(&ana());
    inbox.tg().push_message(chat, &ana(), "/web", None, None);
    let sent = sent_to(&inbox, chat).await;
    let text = sent["text"].as_str().expect("text").to_owned();
    let (words, link) = text.split_once('\n').expect("two lines");
    assert_eq!(words, SIGN_IN_WORDS);
    let token = token_of(link, PUBLIC_URL).to_owned();
    assert_eq!(sent, json!({"chat_id": chat, "text": text, "parse_mode": "HTML", "link_preview_options": {"is_disabled": true}}));

    let first = spend(&inbox.http, &inbox.base, &token).await;
    assert_eq!(first.status(), StatusCode::SEE_OTHER);
    let cookie = session_cookie(first.headers()).expect("a session");
    let session = Session { inbox: &inbox, cookie };
    let (status, _, page) = session.get("/inbox").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Ana"), "signed in as Ana: {page}");
    let again = spend(&inbox.http, &inbox.base, &token).await;
    assert_eq!(again.status(), StatusCode::GONE);
    assert!(session_cookie(again.headers()).is_none());
    inbox.stop().await;
}

/// `/web` needs no admission (an approver named on a request may not be admitted to
/// talk): a stranger gets a link too, and the inbox shows them nothing to answer.
#[tokio::test]
async fn telegram_web_answers_a_stranger_whose_inbox_is_empty() {
    let inbox = Inbox::start().await;
    inbox.push(trade("stranger-1")).await;
    let chat = inbox.tg().private_chat(&mallory());
    inbox.tg().push_message(chat, &mallory(), "/web", None, None);
    let sent = sent_to(&inbox, chat).await;
    let link = sent["text"].as_str().and_then(|t| t.split_once('\n')).map(|(_, link)| link.to_owned()).expect("a link");
    let signed_in = spend(&inbox.http, &inbox.base, token_of(&link, PUBLIC_URL)).await;
    let session = Session { inbox: &inbox, cookie: session_cookie(signed_in.headers()).expect("a session") };
    let (_, _, page) = session.get("/inbox").await;
    assert_eq!(support::web_inbox::title(&page), "(0) Inbox");
    inbox.stop().await;
}

/// `/web` in a group is refused with the reason, and no link is sent there.
#[tokio::test]
async fn telegram_web_in_a_group_is_refused() {
    let inbox = Inbox::start().await;
    inbox.tg().push_message(OPS, &ana(), "/web", None, None);
    let sent = sent_to(&inbox, OPS).await;
    assert_eq!(sent, json!({"chat_id": OPS, "text": DIRECT_ONLY, "parse_mode": "HTML", "link_preview_options": {"is_disabled": true}}));
    assert!(inbox.tg().calls("sendMessage").iter().all(|b| !b["text"].as_str().unwrap_or_default().contains("/inbox/sign-in/")));
    inbox.stop().await;
}

/// With a plain-http inbox the card's last line is the link to its page, and no button
/// is added; once decided, the locked card shows neither.
#[tokio::test]
async fn telegram_card_links_its_page_in_the_text_on_plain_http() {
    let inbox = Inbox::start().await;
    let id = inbox.push(trade("card-http")).await;
    let card = inbox.tg_message("execute_trade").await;
    let text = card["text"].as_str().expect("text");
    assert!(text.ends_with(&format!("\n🌐 Open in browser: {PUBLIC_URL}/inbox/requests/{id}")), "{text}");
    assert!(tg_buttons(&card).iter().all(|b| b.get("url").is_none() && b["callback_data"].is_string()), "{card}");
    let labels: Vec<String> = tg_buttons(&card).iter().filter_map(|b| b["text"].as_str().map(str::to_owned)).collect();
    assert_eq!(labels, ["✅ Approve", "❌ Reject", "💬 Comment"]);

    let ana = inbox.sign_in(&ana()).await;
    let csrf = ana.csrf().await;
    let (status, _, _) = ana.post(&format!("/inbox/requests/{id}/decide"), &[("csrf", &csrf), ("action", "0"), ("decision", "approve")]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let locked = inbox.tg_locked(card["message_id"].as_i64().expect("id"), "Ana").await;
    assert!(!locked["text"].as_str().unwrap_or_default().contains("Open in browser"), "{locked}");
    inbox.stop().await;
}

/// With an https inbox the card gets a URL button in a row of its own under the
/// decisions, and its text no link line.
#[tokio::test]
async fn telegram_card_gets_a_url_button_on_https() {
    let inbox = Inbox::start_with(&[("web.public_url", "https://inbox.example")]).await;
    let id = inbox.push(trade("card-https")).await;
    let card = inbox.tg_message("execute_trade").await;
    let rows = card["reply_markup"]["inline_keyboard"].as_array().cloned().expect("keyboard");
    assert_eq!(rows.last(), Some(&json!([{"text": "🌐 Open in browser", "url": format!("https://inbox.example/inbox/requests/{id}")}])));
    assert_eq!(rows.len(), 2, "the decisions' row, then the link's: {rows:?}");
    assert!(!card["text"].as_str().unwrap_or_default().contains("Open in browser"));
    assert!(inbox.tg().errors().is_empty(), "{:?}", inbox.tg().errors());
    inbox.stop().await;
}

/// With the inbox off, `/web` says so and the card has no link at all.
#[tokio::test]
async fn telegram_inbox_off_no_link_and_web_says_so() {
    let inbox = Inbox::start_with(&[("web.enabled", "false")]).await;
    inbox.push(trade("off-1")).await;
    let card = inbox.tg_message("execute_trade").await;
    assert!(!card.to_string().contains("Open in browser") && !card.to_string().contains("/inbox/"), "{card}");
    assert!(tg_buttons(&card).iter().all(|b| b.get("url").is_none()));
    let chat = inbox.tg().private_chat(&ana());
    inbox.tg().push_message(chat, &ana(), "/web", None, None);
    assert_eq!(sent_to(&inbox, chat).await["text"], INBOX_OFF);
    inbox.tg().push_message(chat, &ana(), "/help", None, None);
    assert_eq!(
        nth_sent_to(&inbox, chat, 1).await["text"],
        "Send a message to talk to the agent. /new starts a fresh session, /cancel stops the current turn, /pending shows what waits for a decision, /rules lists what is approved without asking (/rules revoke ID takes one back).",
        "the help offers no /web without an inbox"
    );
    inbox.stop().await;
}

/// With the inbox on, `/help` offers `/web`.
#[tokio::test]
async fn telegram_help_offers_web_with_the_inbox_on() {
    let inbox = Inbox::start().await;
    let chat = inbox.tg().private_chat(&ana());
    inbox.tg().push_message(chat, &ana(), "/help", None, None);
    let help = sent_to(&inbox, chat).await["text"].as_str().expect("text").to_owned();
    assert!(help.ends_with("/web (here, in private) sends a sign-in link to the web inbox."), "{help}");
    inbox.stop().await;
}

/// The bot's `n`-th sendMessage to `chat` (from 0).
async fn nth_sent_to(inbox: &Inbox, chat: i64, n: usize) -> Value {
    wait_until(|| async { inbox.tg().calls("sendMessage").into_iter().filter(|b| b["chat_id"] == json!(chat)).nth(n) }).await
}

/// `/web` in Vietnamese: the reply follows the person's language.
#[tokio::test]
async fn telegram_web_reply_follows_the_persons_language() {
    let inbox = Inbox::start().await;
    let linh = User::new(5005, "Linh", Some("vi"));
    let chat = inbox.tg().private_chat(&linh);
    inbox.tg().push_message(chat, &linh, "/web", None, None);
    let text = sent_to(&inbox, chat).await["text"].as_str().expect("text").to_owned();
    let (words, link) = text.split_once('\n').expect("two lines");
    assert_eq!(words, "🔑 Liên kết đăng nhập hộp chờ duyệt trên web của bạn. Chỉ dùng được một lần, trong 10 phút; đừng chuyển cho người khác.");
    token_of(link, PUBLIC_URL);
    inbox.stop().await;
}

/// The Telegram card's limits still hold with the link: 30 actions (the fullest
/// keyboard, a page of 10 with every button) and 300 options keep within 100 buttons
/// and 8 a row with the link's row last; 2,000-row args with the link in the text stay
/// within 4,096 characters, the link line whole at the end.
#[test]
fn telegram_cards_keep_their_limits_with_the_link() {
    use hitl_bridge::interaction::{Interaction, RequestBuilder, TimeoutDefaults};
    use hitl_bridge::platform::descriptor::BrowserLink;
    use hitl_bridge::platform::kit::token::TokenSigner;
    use hitl_bridge::platform::locale::Locale;
    use hitl_bridge::platform::telegram::render::{pages, render_card};
    use hitl_bridge::platform::telegram::wizard::View;
    use hitl_bridge::protocol::ActionRequest;
    let request = |actions: Vec<ActionRequest>| {
        let request = RequestBuilder::start("S_1", actions, vec![], Some(600)).finish(TimeoutDefaults::default()).expect("request");
        Interaction::new("a1b2c3d4e5f6".into(), "S".into(), request, None, 0)
    };
    let action = |name: &str, args: Value| ActionRequest { name: name.into(), args, description: None, tool_use_id: None };
    let signer = TokenSigner::new(b"secret");
    let button = BrowserLink::Button("https://inbox.example/inbox/requests/a1b2c3d4e5f6".into());
    let link_row = json!([{"text": "🌐 Open in browser", "url": "https://inbox.example/inbox/requests/a1b2c3d4e5f6"}]);

    let thirty = request((1..=30).map(|n| action(&format!("tool_{n}"), json!({"n": n}))).collect());
    let options: Vec<Value> = (1..=300).map(|n| json!({"label": format!("Option {n}")})).collect();
    let question = request(vec![action("ask_user_question", json!({"questions": [{"question": "Which?", "multiSelect": true, "options": options}]}))]);
    for i in [&thirty, &question] {
        for page in 0..pages(i, 0) {
            let card = render_card(i, View { step: 0, page }, Locale::En, &signer, Some(&button));
            let rows = serde_json::to_value(&card.keyboard).expect("json")["inline_keyboard"].as_array().cloned().expect("rows");
            let total: usize = rows.iter().map(|r| r.as_array().map_or(0, Vec::len)).sum();
            assert!(total <= 100 && rows.iter().all(|r| r.as_array().is_some_and(|r| r.len() <= 8)), "page {page}: {rows:?}");
            assert_eq!(rows.last(), Some(&link_row), "page {page}");
        }
    }

    let big = request(vec![action("bulk_insert", json!({"rows": (0..2000).map(|n| format!("row {n}")).collect::<Vec<_>>()}))]);
    let url = "http://127.0.0.1:8790/inbox/requests/a1b2c3d4e5f6";
    for locale in [Locale::En, Locale::Vi, Locale::Zh] {
        let card = render_card(&big, View { step: 0, page: 0 }, locale, &signer, Some(&BrowserLink::InText(url.into())));
        assert!(card.text.chars().count() <= 4096, "{locale:?}: {}", card.text.chars().count());
        assert!(card.text.ends_with(&format!(": {url}")), "{locale:?}: the link line is last and whole");
        assert!(!card.full_args.is_empty(), "the args are still attached whole");
    }
}

// ---------------------------------------------------------------------------------
// Discord.

const THAO: &str = "500000000000000001";
const SECRET: &str = "ci-secret";

/// A bridge on the fake Discord (no agent), requests pushed over `/v1` to
/// [`CHANNEL_ID`], Thảo the approver, `web.*` from `web`.
struct OnDiscord {
    harness: Harness,
    base: String,
    http: reqwest::Client,
}

impl OnDiscord {
    async fn start(web: &[(&str, &str)]) -> OnDiscord {
        let mut harness = Harness::on(Chat::Discord)
            .no_agent()
            .set("web.enabled", "true")
            .set("web.public_url", PUBLIC_URL)
            .settings(web)
            .tweak(|s| {
                s.platforms.get_mut::<hitl_bridge::platform::discord::settings::DiscordSettings>().channels = vec![CHANNEL_ID.into()];
                s.http.api_tokens = vec![format!("ci:{SECRET}")];
                s.access.approvers = vec![format!("discord:{THAO}")];
            })
            .build()
            .await;
        harness.boot().await;
        let base = format!("http://{}", harness.app().http_addr().expect("http listener"));
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
        OnDiscord { harness, base, http }
    }

    fn fake(&self) -> &FakeDiscord {
        self.harness.discord()
    }

    /// Pushes a trade to the channel; the interaction id and the card as posted.
    async fn push_card(&self, key: &str) -> (String, Value) {
        let mut body = trade(key);
        body["targets"] = json!([{"platform": "discord", "channel_id": CHANNEL_ID}]);
        let response = self.http.post(format!("{}/v1/requests", self.base)).bearer_auth(SECRET).json(&body).send().await.expect("push");
        assert_eq!(response.status(), StatusCode::CREATED);
        let card = self.fake().wait_request(0, |r| r.method == "POST" && r.path.ends_with("/messages") && has_embed(&r.body)).await;
        let store = hitl_bridge::store::Store::connect(&self.harness.settings.store.url).await.expect("store");
        let id = store.interactions_with_key(key).await.expect("read").into_iter().next().expect("stored").id;
        store.close().await;
        (id, card.body)
    }

    /// `/web` from Thảo: in a DM with the bot when `direct`, else in the channel; the
    /// edit that answers it.
    async fn web_command(&self, direct: bool) -> Value {
        let thao = fake_discord::user(THAO, "Thảo");
        let mut command = fake_discord::command(self.fake(), "web", CHANNEL_ID, &thao);
        if direct {
            let object = command.as_object_mut().expect("interaction object");
            object.remove("guild_id");
            object.remove("member");
            object.insert("user".into(), thao.clone());
            object.insert("channel".into(), json!({"id": CHANNEL_ID, "type": 1}));
            object.insert("context".into(), json!(1));
            object.insert("authorizing_integration_owners".into(), json!({"1": BOT_ID}));
        }
        self.fake().dispatch("INTERACTION_CREATE", command);
        self.fake().wait_request(0, |r| r.method == "PATCH" && r.path.ends_with("/messages/@original")).await.body
    }

    async fn stop(self) {
        self.harness.shutdown().await;
    }
}

/// `/web` in a DM: the reply edits in the link with embeds suppressed (flag 4); the
/// link signs Thảo in once.
#[tokio::test]
async fn discord_web_in_a_dm_sends_a_link_without_embeds_that_signs_in_once() {
    let d = OnDiscord::start(&[]).await;
    let reply = d.web_command(true).await;
    let content = reply["content"].as_str().expect("content").to_owned();
    let (words, link) = content.split_once('\n').expect("two lines");
    assert_eq!(words, SIGN_IN_WORDS);
    let token = token_of(link, PUBLIC_URL).to_owned();
    assert_eq!(reply, json!({"content": content, "flags": 4}));
    let first = spend(&d.http, &d.base, &token).await;
    assert_eq!(first.status(), StatusCode::SEE_OTHER);
    assert!(session_cookie(first.headers()).is_some());
    assert_eq!(spend(&d.http, &d.base, &token).await.status(), StatusCode::GONE);
    d.stop().await;
}

/// `/web` in a guild channel is refused (the answer is ephemeral, to Thảo alone).
#[tokio::test]
async fn discord_web_in_a_channel_is_refused() {
    let d = OnDiscord::start(&[]).await;
    let reply = d.web_command(false).await;
    assert_eq!(reply, json!({"content": DIRECT_ONLY, "flags": 4}));
    d.stop().await;
}

/// https: a link button in a row of its own; plain http: a field of the embed, no
/// button.
#[tokio::test]
async fn discord_card_link_is_a_button_on_https_and_a_field_on_http() {
    let d = OnDiscord::start(&[("web.public_url", "https://inbox.example")]).await;
    let (id, card) = d.push_card("dc-https").await;
    let rows = card["components"].as_array().cloned().expect("rows");
    let url = format!("https://inbox.example/inbox/requests/{id}");
    assert_eq!(rows.last(), Some(&json!({"type": 1, "components": [{"type": 2, "style": 5, "label": "🌐 Open in browser", "url": url, "disabled": false}]})));
    assert!(!card["embeds"].to_string().contains("Open in browser"));
    d.stop().await;

    let d = OnDiscord::start(&[]).await;
    let (id, card) = d.push_card("dc-http").await;
    assert!(components(&card).iter().all(|c| c["style"] != 5), "{card}");
    let fields = card["embeds"][0]["fields"].as_array().cloned().expect("fields");
    assert_eq!(fields.last(), Some(&json!({"name": "🌐 Open in browser", "value": format!("{PUBLIC_URL}/inbox/requests/{id}"), "inline": false})));
    d.stop().await;
}

/// The inbox off: `/web` in a DM says so, and the card has no link.
#[tokio::test]
async fn discord_inbox_off_no_link_and_web_says_so() {
    let d = OnDiscord::start(&[("web.enabled", "false")]).await;
    let (_, card) = d.push_card("dc-off").await;
    assert!(!card.to_string().contains("Open in browser") && !card.to_string().contains("/inbox/"), "{card}");
    let reply = d.web_command(true).await;
    assert_eq!(reply, json!({"content": INBOX_OFF, "flags": 4}));
    d.stop().await;
}

// ---------------------------------------------------------------------------------
// Slack.

/// With the inbox on over https, the Slack card's last block is a link button to the
/// request's page (Slack opens it and sends a click without a value, which changes
/// nothing); with the inbox off, the card has no link.
#[tokio::test]
async fn slack_card_links_its_page_only_with_the_inbox_on() {
    use support::fake_slack::{OPS, Person};
    for (web, expect_link) in [(&[("web.public_url", "https://inbox.example")][..], true), (&[("web.enabled", "false")][..], false)] {
        let rig = Harness::on(Chat::Slack)
            .no_agent()
            .set("web.enabled", "true")
            .set("web.public_url", PUBLIC_URL)
            .settings(web)
            .tweak(|s| {
                s.http.api_tokens = vec![format!("ci:{SECRET}")];
                s.access.approvers = vec!["slack:U0ANA".into()];
            })
            .start()
            .await;
        let mut body = trade("sl-link");
        body["targets"] = json!([{"platform": "slack", "channel_id": OPS}]);
        rig.api(SECRET).push(&body).await;
        let ts = wait_until(|| async { rig.slack().posted().last().map(|(_, ts)| ts.clone()) }).await;
        let card = rig.slack().message(OPS, &ts).expect("the card");
        let last = card["blocks"].as_array().and_then(|b| b.last().cloned()).expect("blocks");
        if expect_link {
            let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.expect("store");
            let id = store.interactions_with_key("sl-link").await.expect("read").into_iter().next().expect("stored").id;
            store.close().await;
            let url = format!("https://inbox.example/inbox/requests/{id}");
            assert_eq!(
                last["elements"],
                json!([{"type": "button", "action_id": "hitl.browser", "text": {"type": "plain_text", "text": "🌐 Open in browser", "emoji": true}, "url": url}])
            );
            let mut click = rig.slack().click_envelope(&Person::new("U0ANA", "ana"), OPS, &ts, "hitl.browser", "");
            click["payload"]["actions"][0].as_object_mut().expect("action").remove("value");
            let envelope = click["envelope_id"].as_str().expect("id").to_owned();
            rig.slack().push(click);
            rig.slack().wait_ack(&envelope).await;
            assert_eq!(rig.api(SECRET).send(reqwest::Method::GET, "/v1/requests/sl-link", None).await.1["status"], "pending");
        } else {
            assert!(!card.to_string().contains("Open in browser") && !card.to_string().contains("/inbox/"), "{card}");
        }
        rig.shutdown().await;
    }
}
