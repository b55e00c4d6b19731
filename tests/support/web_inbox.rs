//! A bridge with the web inbox on, Telegram on the fake and the inbound API open, for
//! the inbox's suites (tests/web.rs over HTTP, tests/web_browser.rs in Chromium):
//! requests are pushed over `/v1` to the fake Telegram group [`OPS`], and people sign
//! in with links made as `/web` or `hitl-bridge web login` make them.

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, SET_COOKIE};
use serde_json::{Value, json};

use super::fake_telegram::{FakeTelegram, User};
use super::{Chat, Harness, wait_until};
use hitl_bridge::interaction::Actor;
use hitl_bridge::store::Store;

pub const SECRET: &str = "ci-secret";
pub const OPS: i64 = -100_777;
/// What `web.public_url` says; links are re-based on the listener's real address.
pub const PUBLIC_URL: &str = "http://inbox.example";

/// Ana (telegram:3003) is the configured approver.
pub fn ana() -> User {
    User::new(3003, "Ana", Some("en"))
}

/// Minh (telegram:4004) is a second approver (racing Ana).
pub fn minh() -> User {
    User::new(4004, "Minh", Some("en"))
}

/// Mallory (telegram:6666) may answer nothing.
pub fn mallory() -> User {
    User::new(6666, "Mallory", Some("en"))
}

pub fn person(user: &User) -> Actor {
    Actor::new("telegram", &user.id.to_string(), &user.first_name)
}

pub struct Inbox {
    pub harness: Harness,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Follows no redirect, keeps no cookie: each test says what it sends.
    pub http: reqwest::Client,
}

crate::wraps_harness!(Inbox, harness);

impl Inbox {
    pub async fn start() -> Inbox {
        Self::start_with(&[]).await
    }

    /// As [`Inbox::start`], with `extra` settings on top (`web.enabled = false`, an
    /// https `web.public_url`).
    pub async fn start_with(extra: &[(&str, &str)]) -> Inbox {
        let harness = Harness::on(Chat::Telegram)
            .no_agent()
            .set("timeouts.grace_secs", "0")
            .set("web.enabled", "true")
            .set("web.public_url", PUBLIC_URL)
            .settings(extra)
            .tweak(|settings| {
                settings.http.api_tokens = vec![format!("ci:{SECRET}")];
                settings.access.approvers = vec!["telegram:3003".into(), "telegram:4004".into()];
            })
            .build()
            .await;
        harness.telegram().group(OPS, "ops", false);
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
        let mut inbox = Inbox { harness, base: String::new(), http };
        inbox.boot().await;
        inbox
    }

    pub async fn boot(&mut self) {
        self.harness.boot().await;
        self.base = format!("http://{}", self.harness.app().http_addr().expect("http listener"));
    }

    pub async fn restart(&mut self) {
        self.harness.stop_bridge().await;
        self.boot().await;
    }

    pub fn tg(&self) -> &FakeTelegram {
        self.harness.telegram()
    }

    /// Pushes `body` (targets default to the ops group); returns the interaction id.
    pub async fn push(&self, mut body: Value) -> String {
        if body.get("targets").is_none() {
            body["targets"] = json!([{"platform": "telegram", "chat_id": OPS.to_string()}]);
        }
        let key = body["approval_key"].as_str().expect("approval_key").to_owned();
        let response = self.http.post(format!("{}/v1/requests", self.base)).bearer_auth(SECRET).json(&body).send().await.expect("push");
        assert_eq!(response.status(), StatusCode::CREATED, "{}", response.text().await.unwrap_or_default());
        self.interaction_id(&key).await
    }

    pub async fn interaction_id(&self, key: &str) -> String {
        let store = self.store().await;
        let found = store.interactions_with_key(key).await.expect("read").into_iter().next().expect("the pushed request is stored").id;
        store.close().await;
        found
    }

    /// The request as the agent reads it (`GET /v1/requests/{key}`).
    pub async fn agent_view(&self, key: &str) -> Value {
        let response = self.http.get(format!("{}/v1/requests/{key}", self.base)).bearer_auth(SECRET).send().await.expect("get");
        response.json().await.expect("json")
    }

    /// Waits until the agent sees the request decided.
    pub async fn decided(&self, key: &str) -> Value {
        wait_until(|| async {
            let state = self.agent_view(key).await;
            (state["status"] != "pending").then_some(state)
        })
        .await
    }

    pub async fn store(&self) -> Store {
        Store::connect(&self.harness.settings.store.url).await.expect("store")
    }

    /// A one-time sign-in link for `user`, as `/web` in a chat makes it, on the
    /// listener's real address.
    pub async fn sign_in_link(&self, user: &User) -> String {
        let store = self.store().await;
        let link = hitl_bridge::web::sign_in_link(&store, &self.harness.settings.web, &person(user)).await.expect("link");
        store.close().await;
        self.local(&link)
    }

    /// `link` (under `web.public_url`) on the listener's real address.
    pub fn local(&self, link: &str) -> String {
        link.replacen(PUBLIC_URL, &self.base, 1)
    }

    /// Signs `user` in over HTTP (the link's page, then its button); the session.
    pub async fn sign_in(&self, user: &User) -> Session<'_> {
        let link = self.sign_in_link(user).await;
        let token = link.rsplit('/').next().expect("token").to_owned();
        let response = self.http.post(format!("{}/inbox/sign-in", self.base)).form(&[("token", token)]).send().await.expect("sign in");
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let cookie = session_cookie(response.headers()).expect("a session cookie");
        Session { inbox: self, cookie }
    }

    /// The bot's message in the ops group containing `needle`.
    pub async fn tg_message(&self, needle: &str) -> Value {
        wait_until(|| async { self.tg().bot_messages(OPS).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains(needle))) }).await
    }

    /// Waits until message `id` in the ops group shows `needle` and has no buttons.
    pub async fn tg_locked(&self, id: i64, needle: &str) -> Value {
        wait_until(|| async {
            self.tg().message(OPS, id).filter(|m| {
                let keyboard = m["reply_markup"]["inline_keyboard"].as_array().is_some_and(|rows| !rows.is_empty());
                m["text"].as_str().is_some_and(|t| t.contains(needle)) && !keyboard
            })
        })
        .await
    }

    pub async fn stop(self) {
        self.harness.shutdown().await;
    }
}

/// `hitl_inbox=VALUE` from a `Set-Cookie` that sets (not clears) it.
pub fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter(|v| v.starts_with("hitl_inbox=") && !v.contains("Max-Age=0"))
        .map(|v| v.split(';').next().unwrap_or_default().to_owned())
        .next()
}

/// A signed-in browser, over plain HTTP.
pub struct Session<'a> {
    pub inbox: &'a Inbox,
    /// `hitl_inbox=…`
    pub cookie: String,
}

impl Session<'_> {
    pub async fn get(&self, path: &str) -> (StatusCode, HeaderMap, String) {
        let response = self.inbox.http.get(format!("{}{path}", self.inbox.base)).header("cookie", &self.cookie).send().await.expect("get");
        let (status, headers) = (response.status(), response.headers().clone());
        (status, headers, response.text().await.expect("body"))
    }

    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> (StatusCode, HeaderMap, String) {
        let response = self.inbox.http.post(format!("{}{path}", self.inbox.base)).header("cookie", &self.cookie).form(fields).send().await.expect("post");
        let (status, headers) = (response.status(), response.headers().clone());
        (status, headers, response.text().await.expect("body"))
    }

    /// This session's CSRF token, read from a page's hidden field.
    pub async fn csrf(&self) -> String {
        let (_, _, page) = self.get("/inbox").await;
        let at = page.find(r#"name="csrf" value=""#).expect("a CSRF field") + r#"name="csrf" value=""#.len();
        page[at..].split('"').next().expect("value").to_owned()
    }
}

/// The `<title>` of a page.
pub fn title(page: &str) -> &str {
    let start = page.find("<title>").map(|i| i + 7).unwrap_or(0);
    let end = page[start..].find("</title>").map(|i| start + i).unwrap_or(start);
    &page[start..end]
}

/// A browser signed in to a bridge whatever its chat platform: `person` signed in with
/// a link made as `/web` makes it (which copies no groups), over plain HTTP.
pub struct Browser {
    base: String,
    http: reqwest::Client,
    pub cookie: String,
}

impl Browser {
    /// Signs `person` in to the bridge of `harness`.
    pub async fn sign_in(harness: &super::Harness, person: &Actor) -> Browser {
        let store = Store::connect(&harness.settings.store.url).await.expect("store");
        let link = hitl_bridge::web::sign_in_link(&store, &harness.settings.web, person).await.expect("link");
        store.close().await;
        Self::from_link(harness, &link).await
    }

    /// Signs in with `link`, a sign-in link as a chat handed it out.
    pub async fn from_link(harness: &super::Harness, link: &str) -> Browser {
        let base = format!("http://{}", harness.app().http_addr().expect("http listener"));
        let token = link.rsplit('/').next().expect("token").to_owned();
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
        let response = http.post(format!("{base}/inbox/sign-in")).form(&[("token", token)]).send().await.expect("sign in");
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        let cookie = session_cookie(response.headers()).expect("a session cookie");
        Browser { base, http, cookie }
    }

    pub async fn get(&self, path: &str) -> (StatusCode, String) {
        let response = self.http.get(format!("{}{path}", self.base)).header("cookie", &self.cookie).send().await.expect("get");
        (response.status(), response.text().await.expect("body"))
    }

    /// Posts `fields` with the session's CSRF token.
    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> (StatusCode, String) {
        let (_, page) = self.get("/inbox").await;
        let at = page.find(r#"name="csrf" value=""#).expect("a CSRF field") + r#"name="csrf" value=""#.len();
        let csrf = page[at..].split('"').next().expect("value").to_owned();
        let mut fields: Vec<(&str, &str)> = fields.to_vec();
        fields.push(("csrf", &csrf));
        let response = self.http.post(format!("{}{path}", self.base)).header("cookie", &self.cookie).form(&fields).send().await.expect("post");
        (response.status(), response.text().await.expect("body"))
    }
}
