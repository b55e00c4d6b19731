//! The seed flows written once and run on every chat platform: the console, Telegram
//! (teloxide against the fake Bot API), Discord (serenity against the fake Discord),
//! Slack (the bridge's own Web API and Socket Mode clients against the fake Slack),
//! Microsoft Teams (the bridge's Connector API client and JWT-checked endpoint against
//! the fake Teams), Mattermost (REST v4, the WebSocket and the integration endpoint
//! against the fake Mattermost) and Matrix (matrix-sdk against a real Synapse, in an
//! encrypted room).
//! Each scenario talks to a [`Person`], a platform-neutral "someone in the chat", and
//! asserts the exact commands the reference agent received; how each platform shows a
//! request (keyboards, embeds, wording) is the platform suites' business.
//!
//! A new platform gets this whole suite by implementing [`Person`] and adding one line
//! to [`on_every_platform!`].

mod support;

use hitl_bridge::agent_sim::SimHandle;
use hitl_bridge::platform::discord::settings::DiscordSettings;
use hitl_bridge::platform::mattermost::settings::MattermostSettings;
use hitl_bridge::platform::slack::settings::SlackSettings;
use hitl_bridge::platform::teams::settings::TeamsSettings;
use serde_json::{Value, json};
use support::discord_chat::{button as discord_button, callbacks, components, has_embed, wait_edit, wait_text};
use support::fake_discord::{self, CHANNEL_ID};
use support::fake_mattermost::{self, FakeMattermost};
use support::fake_slack::{self, OPS};
use support::fake_teams;
use support::fake_telegram::User;
use support::matrix_person::{MatrixPerson, body_of, bridge_on_matrix};
use support::slack_chat::{self, SlackChat};
use support::synapse::Synapse;
use support::telegram_chat::{TelegramChat, text_of};
use support::{Bridge, Chat, Harness, Rig, approvals, session_id, wait_until};

/// One choice for one action of an approval request.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Choice<'a> {
    Approve,
    Reject,
    /// Edit with these args (a JSON object).
    Edit(&'a str),
}

/// Someone in the chat, on some platform: says things, sees the agent's replies, and
/// decides the request in front of them.
trait Person {
    /// Sends `text` to the agent, as a chat message.
    async fn say(&mut self, text: &str);
    /// Waits until the agent's reply containing `text` is shown in the chat.
    async fn sees(&mut self, text: &str);
    /// Decides the one approval request in the chat, one choice per action in order,
    /// and submits it the way the platform does.
    async fn decide(&mut self, choices: &[Choice<'_>]);
    /// The reference agent behind the bridge.
    fn agent(&self) -> &SimHandle;
    /// Stops the bridge, the fakes and the agent, checking the platform saw nothing it
    /// would have refused.
    async fn finish(self);
}

/// Seed 002: approve sends exactly one approve decision.
async fn approve(mut p: impl Person) {
    p.say("trade").await;
    p.decide(&[Choice::Approve]).await;
    p.sees("Đã đặt lệnh: buy 100 VNM @ 82000").await;
    let s = session_id(p.agent());
    assert_eq!(approvals(p.agent()), vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]);
    p.finish().await;
}

/// Seed 002: reject sends one reject decision, without a message.
async fn reject(mut p: impl Person) {
    p.say("trade").await;
    p.decide(&[Choice::Reject]).await;
    p.sees("Lệnh đã bị hủy.").await;
    let s = session_id(p.agent());
    assert_eq!(approvals(p.agent()), vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"reject"}]})]);
    p.finish().await;
}

/// Seed 002: an edit is sent as `edited_action` with the original tool name, and
/// changes what the agent does.
async fn edit(mut p: impl Person) {
    p.say("trade").await;
    p.decide(&[Choice::Edit(r#"{"symbol":"VNM","quantity":50,"side":"buy","price":82000}"#)]).await;
    p.sees("Đã đặt lệnh: buy 50 VNM @ 82000").await;
    let s = session_id(p.agent());
    assert_eq!(
        approvals(p.agent()),
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"edit","edited_action":{"name":"execute_trade","args":{"symbol":"VNM","quantity":50,"side":"buy","price":82000}}}]})]
    );
    p.finish().await;
}

/// Two actions: one decision each, full length, in action order, in one command.
async fn two_actions(mut p: impl Person) {
    p.say("two actions").await;
    p.decide(&[Choice::Approve, Choice::Reject]).await;
    p.sees("execute_trade: approve; send_report: reject").await;
    let s = session_id(p.agent());
    assert_eq!(
        approvals(p.agent()),
        vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),
        "decisions":[{"type":"approve"},{"type":"reject"}]})]
    );
    p.finish().await;
}

/// One test per scenario and platform: `approve::on_telegram`, `edit::on_console`, …
macro_rules! on_every_platform {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            use super::*;

            #[tokio::test]
            async fn on_console() {
                super::$scenario(OnConsole::start().await).await;
            }

            #[tokio::test]
            async fn on_telegram() {
                super::$scenario(OnTelegram::start().await).await;
            }

            #[tokio::test]
            async fn on_discord() {
                super::$scenario(OnDiscord::start().await).await;
            }

            #[tokio::test]
            async fn on_slack() {
                super::$scenario(OnSlack::start().await).await;
            }

            #[tokio::test]
            async fn on_teams() {
                super::$scenario(OnTeams::start().await).await;
            }

            #[tokio::test]
            async fn on_mattermost() {
                super::$scenario(OnMattermost::start().await).await;
            }

            #[tokio::test]
            #[ignore = "needs Synapse: bash tests/backends/install.sh synapse"]
            async fn on_matrix() {
                super::$scenario(OnMatrix::start().await).await;
            }
        }
    )*};
}

on_every_platform!(approve, reject, edit, two_actions);

// --- The console: Thảo types at the prompt. ----------------------------------------

struct OnConsole {
    sim: SimHandle,
    bridge: Bridge,
    _dir: tempfile::TempDir,
}

impl OnConsole {
    async fn start() -> Self {
        let Rig { sim, bridge, dir } = Rig::start(20, &[]).await;
        OnConsole { sim, bridge, _dir: dir }
    }
}

impl Person for OnConsole {
    async fn say(&mut self, text: &str) {
        self.bridge.send(text).await;
    }

    async fn sees(&mut self, text: &str) {
        self.bridge.expect(&format!("agent: {text}")).await;
    }

    async fn decide(&mut self, choices: &[Choice<'_>]) {
        // The console asks action by action and sends once the last is decided.
        for choice in choices {
            self.bridge.expect("? [a]pprove").await;
            let line = match choice {
                Choice::Approve => "a".to_owned(),
                Choice::Reject => "r".to_owned(),
                Choice::Edit(args) => format!("e {args}"),
            };
            self.bridge.send(&line).await;
        }
    }

    fn agent(&self) -> &SimHandle {
        &self.sim
    }

    async fn finish(self) {
        support::stop(self.bridge, self.sim).await;
    }
}

// --- Telegram: Thảo (Vietnamese client) in her private chat with the bot. ----------

fn thao_on_telegram() -> User {
    User::new(1001, "Thảo", Some("vi"))
}

struct OnTelegram {
    harness: Harness,
    chat: i64,
}

impl OnTelegram {
    async fn start() -> Self {
        let harness = Harness::on(Chat::Telegram).tweak(|settings| settings.access.users = vec![format!("telegram:{}", thao_on_telegram().id)]).build().await;
        let chat = harness.telegram().private_chat(&thao_on_telegram());
        let mut on = OnTelegram { harness, chat };
        on.harness.boot().await;
        on
    }

    fn person(&self) -> TelegramChat<'_> {
        TelegramChat { fake: self.harness.telegram(), chat: self.chat, user: thao_on_telegram() }
    }

    /// The one message with a keyboard: the request.
    async fn request(&self) -> Value {
        let fake = self.harness.telegram();
        wait_until(|| async {
            fake.bot_messages(self.chat).into_iter().find(|m| m["reply_markup"]["inline_keyboard"].as_array().is_some_and(|k| !k.is_empty()))
        })
        .await
    }
}

impl Person for OnTelegram {
    async fn say(&mut self, text: &str) {
        self.person().say(text);
    }

    async fn sees(&mut self, text: &str) {
        self.person().message_with(text).await;
    }

    async fn decide(&mut self, choices: &[Choice<'_>]) {
        let id = self.request().await["message_id"].as_i64().expect("message id");
        let person = self.person();
        if let [single] = choices {
            match single {
                Choice::Approve => _ = person.click(id, "Duyệt").await,
                Choice::Reject => _ = person.click(id, "Từ chối").await,
                Choice::Edit(args) => {
                    person.click(id, "Sửa").await;
                    person.reply_to_prompt("Trả lời bằng tham số mới dạng đối tượng JSON.", args).await;
                }
            }
            return;
        }
        // Several actions: a row each, the message re-rendered with each choice, then Gửi.
        for (n, choice) in choices.iter().enumerate() {
            let (label, shown) = match choice {
                Choice::Approve => ("Duyệt", "→ ✅ Duyệt"),
                Choice::Reject => ("Từ chối", "→ ❌ Từ chối"),
                Choice::Edit(_) => panic!("no scenario edits one of several actions; the Telegram suite tests that"),
            };
            let before = self.harness.telegram().message(self.chat, id).map(|m| text_of(&m).matches(shown).count()).unwrap_or(0);
            assert_eq!(person.click(id, &format!("{label} #{}", n + 1)).await["text"], "Đã lưu");
            let fake = self.harness.telegram();
            wait_until(|| async { fake.message(self.chat, id).filter(|m| text_of(m).matches(shown).count() > before) }).await;
        }
        person.click(id, "Gửi").await;
    }

    fn agent(&self) -> &SimHandle {
        self.harness.sim()
    }

    async fn finish(mut self) {
        self.harness.stop_bridge().await;
        let refused = self.harness.telegram().errors();
        assert!(refused.is_empty(), "Telegram would have refused: {refused:?}");
        self.harness.shutdown().await;
    }
}

// --- Discord: Thảo in the bot's channel. --------------------------------------------

const THAO_ON_DISCORD: &str = "500000000000000001";

fn thao_on_discord() -> Value {
    fake_discord::user(THAO_ON_DISCORD, "Thảo")
}

struct OnDiscord {
    harness: Harness,
}

impl OnDiscord {
    async fn start() -> Self {
        let harness = Harness::on(Chat::Discord)
            .tweak(|settings| {
                settings.platforms.get_mut::<DiscordSettings>().channels = vec![CHANNEL_ID.into()];
                settings.access.users = vec![format!("discord:{THAO_ON_DISCORD}")];
            })
            .start()
            .await;
        OnDiscord { harness }
    }

    fn click(&self, card: &Value, message_id: &str, label: &str) {
        let fake = self.harness.discord();
        fake.dispatch("INTERACTION_CREATE", fake_discord::click(fake, &discord_button(card, label), message_id, CHANNEL_ID, &thao_on_discord(), &[]));
    }
}

impl Person for OnDiscord {
    async fn say(&mut self, text: &str) {
        let fake = self.harness.discord();
        fake.dispatch("MESSAGE_CREATE", fake_discord::guild_message(fake, CHANNEL_ID, &thao_on_discord(), text, false));
    }

    async fn sees(&mut self, text: &str) {
        wait_text(self.harness.discord(), text).await;
    }

    async fn decide(&mut self, choices: &[Choice<'_>]) {
        let fake = self.harness.discord();
        let card = fake.wait_request(0, |r| r.method == "POST" && r.path.ends_with("/messages") && has_embed(&r.body)).await;
        let id = card.response.as_ref().and_then(|m| m["id"].as_str()).expect("message id").to_owned();
        if let [single] = choices {
            match single {
                Choice::Approve => self.click(&card.body, &id, "Approve"),
                Choice::Reject => self.click(&card.body, &id, "Reject"),
                Choice::Edit(args) => {
                    // Edit opens a modal prefilled with the args; its submission decides.
                    self.click(&card.body, &id, "Edit");
                    let opened = callbacks(fake, 1).await.remove(0);
                    let modal = opened.body["data"]["custom_id"].as_str().expect("modal id");
                    fake.dispatch("INTERACTION_CREATE", fake_discord::modal_submit(fake, modal, &[("args", args)], &id, CHANNEL_ID, &thao_on_discord()));
                }
            }
            return;
        }
        // Several actions: a row each, the card re-rendered with the choice marked, then Submit.
        for (n, choice) in choices.iter().enumerate() {
            let label = match choice {
                Choice::Approve => format!("{}. Approve", n + 1),
                Choice::Reject => format!("{}. Reject", n + 1),
                Choice::Edit(_) => panic!("no scenario edits one of several actions; the Discord suite tests that"),
            };
            self.click(&card.body, &id, &label);
            let marked = format!("✓ {label}");
            wait_edit(fake, &id, |b| components(b).iter().any(|c| c["label"] == marked.as_str())).await;
        }
        self.click(&card.body, &id, "Submit");
    }

    fn agent(&self) -> &SimHandle {
        self.harness.sim()
    }

    async fn finish(self) {
        self.harness.shutdown().await;
    }
}

// --- Slack: Thảo in the ops channel, where every message goes to the agent. ---------

const THAO_ON_SLACK: &str = "U0THAO";

struct OnSlack {
    harness: Harness,
}

impl OnSlack {
    async fn start() -> Self {
        let harness = Harness::on(Chat::Slack)
            .tweak(|settings| {
                settings.platforms.get_mut::<SlackSettings>().channels = vec![OPS.into()];
                settings.access.users = vec![format!("slack:{THAO_ON_SLACK}")];
            })
            .start()
            .await;
        OnSlack { harness }
    }

    fn person(&self) -> SlackChat<'_> {
        SlackChat { fake: self.harness.slack(), channel: OPS, person: fake_slack::Person::new(THAO_ON_SLACK, "Thảo") }
    }

    /// Rejects through the button and its modal, leaving the optional reason empty;
    /// the modal closes.
    async fn reject(&self, ts: &str, label: &str) {
        let person = self.person();
        let opened = self.harness.slack().views().len();
        person.click(ts, label).await;
        let closed = person.submit(opened, &[("reason", "text", "")]).await;
        assert_eq!(closed.get("payload"), None, "the modal closes: {closed}");
    }
}

impl Person for OnSlack {
    async fn say(&mut self, text: &str) {
        self.person().say(text);
    }

    async fn sees(&mut self, text: &str) {
        self.person().text_with(text).await;
    }

    async fn decide(&mut self, choices: &[Choice<'_>]) {
        let person = self.person();
        let ts = person.card().await;
        if let [single] = choices {
            match single {
                Choice::Approve => _ = person.click(&ts, "Approve").await,
                Choice::Reject => self.reject(&ts, "Reject").await,
                Choice::Edit(args) => {
                    // Edit opens a modal prefilled with the args; its submission decides.
                    let opened = self.harness.slack().views().len();
                    person.click(&ts, "Edit").await;
                    let closed = person.submit(opened, &[("args", "json", args)]).await;
                    assert_eq!(closed.get("payload"), None, "the modal closes: {closed}");
                }
            }
            return;
        }
        // Several actions: buttons per action, the card edited with each choice under
        // its action, then Submit.
        for (n, choice) in choices.iter().enumerate() {
            let label = match choice {
                Choice::Approve => format!("Approve #{}", n + 1),
                Choice::Reject => format!("Reject #{}", n + 1),
                Choice::Edit(_) => panic!("no scenario edits one of several actions; the Slack suite tests that"),
            };
            let shown = match choice {
                Choice::Approve => "→ ✅ Approve",
                _ => "→ ❌ Reject",
            };
            let under_action = |card: &Value| {
                let blocks = card["blocks"].as_array().cloned().unwrap_or_default();
                blocks.iter().find(|b| b["block_id"] == format!("action.{n}")).and_then(|b| b["text"]["text"].as_str().map(str::to_owned)).unwrap_or_default()
            };
            match choice {
                Choice::Reject => self.reject(&ts, &label).await,
                _ => _ = person.click(&ts, &label).await,
            }
            wait_until(|| async { under_action(&person.message(&ts)).ends_with(shown).then_some(()) }).await;
        }
        person.click(&ts, "Submit").await;
    }

    fn agent(&self) -> &SimHandle {
        self.harness.sim()
    }

    async fn finish(mut self) {
        self.harness.stop_bridge().await;
        slack_chat::assert_nothing_refused(self.harness.slack());
        self.harness.shutdown().await;
    }
}

// --- Teams: Thảo in her 1:1 chat with the bot. -------------------------------------

const THAO_ON_TEAMS: &str = "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f";

struct OnTeams {
    harness: Harness,
    /// The 1:1 chat, as the fake names the conversation it creates for Thảo.
    chat: String,
}

impl OnTeams {
    async fn start() -> Self {
        let harness = Harness::on(Chat::Teams).tweak(|settings| settings.access.users = vec![format!("teams:{THAO_ON_TEAMS}")]).start().await;
        OnTeams { harness, chat: format!("a:dm-{THAO_ON_TEAMS}") }
    }

    fn thao() -> fake_teams::Person {
        fake_teams::Person::new(THAO_ON_TEAMS, "Thảo")
    }

    fn endpoint(&self) -> String {
        format!("http://{}/teams/messages", self.harness.settings.platforms.get::<TeamsSettings>().messages_listen)
    }

    /// Clicks the `nth` button titled `title` on the card, with `inputs` typed; the
    /// invoke must be answered with a card.
    async fn click(&self, id: &str, card: &Value, title: &str, nth: usize, inputs: Value) {
        let (status, answer) = self.harness.teams().click(&self.endpoint(), &Self::thao(), &self.chat, id, card, title, nth, inputs).await;
        assert_eq!((status, answer["type"].clone()), (200, json!("application/vnd.microsoft.card.adaptive")), "{answer}");
    }
}

impl Person for OnTeams {
    async fn say(&mut self, text: &str) {
        let fake = self.harness.teams();
        let activity = fake.activity_from(&Self::thao(), &self.chat, "personal", json!({ "text": text }));
        let (status, _) = fake.post(&self.endpoint(), &activity).await;
        assert_eq!(status, 200);
    }

    async fn sees(&mut self, text: &str) {
        self.harness.teams().wait_text(&self.chat, text).await;
    }

    async fn decide(&mut self, choices: &[Choice<'_>]) {
        let (id, card) = self.harness.teams().wait_card(&self.chat).await;
        for (n, choice) in choices.iter().enumerate() {
            match choice {
                Choice::Approve => self.click(&id, &card, "✅ Approve", n, json!({})).await,
                Choice::Reject => self.click(&id, &card, "❌ Reject", n, json!({ format!("reason.{n}"): "" })).await,
                Choice::Edit(args) => self.click(&id, &card, "✏️ Edit", n, json!({ format!("args.{n}"): args })).await,
            }
        }
        if choices.len() > 1 {
            self.click(&id, &card, "📨 Submit", 0, json!({})).await;
        }
    }

    fn agent(&self) -> &SimHandle {
        self.harness.sim()
    }

    async fn finish(mut self) {
        self.harness.stop_bridge().await;
        assert_eq!(self.harness.teams().pace_violations(), 0, "the bridge kept within Teams' windows");
        self.harness.shutdown().await;
    }
}

// --- Mattermost: Thảo in the ops channel, where every post goes to the agent. -------

/// A post's Markdown as a person reads it: without the escaping backslashes and the
/// word joiners that keep an `@` from mentioning.
fn shown(markdown: &str) -> String {
    markdown.replace(['\\', '\u{2060}'], "")
}

fn thao_on_mattermost() -> fake_mattermost::Person {
    fake_mattermost::Person::new("t0ha0000000000000000000000", "thao")
}

struct OnMattermost {
    harness: Harness,
    /// Thảo's first post: the thread the agent answers in.
    thread: Option<String>,
}

impl OnMattermost {
    async fn start() -> Self {
        let thao = thao_on_mattermost();
        let users = vec![format!("mattermost:{}", thao.id)];
        let harness = Harness::on(Chat::Mattermost)
            .tweak(move |settings| {
                settings.platforms.get_mut::<MattermostSettings>().channels = vec![fake_mattermost::OPS.into()];
                settings.access.users = users;
            })
            .start()
            .await;
        harness.mattermost().user(&thao);
        OnMattermost { harness, thread: None }
    }

    fn fake(&self) -> &FakeMattermost {
        self.harness.mattermost()
    }

    /// The bot's post in Thảo's thread that has buttons: the card.
    async fn card(&self) -> String {
        let thread = self.thread.clone().expect("Thảo said something first");
        wait_until(|| async {
            self.fake().posts().into_iter().find(|id| {
                self.fake().post(id).is_some_and(|p| {
                    p["user_id"] == fake_mattermost::BOT_ID
                        && p["root_id"] == thread.as_str()
                        && p["props"]["attachments"].as_array().is_some_and(|a| a.iter().any(|a| a.get("actions").is_some()))
                })
            })
        })
        .await
    }

    /// Clicks `label` on the card, then submits the dialog it opens with `submission`.
    async fn through_dialog(&self, card: &str, label: &str, submission: Value) {
        let opened = self.fake().dialogs().len();
        self.fake().click(&thao_on_mattermost(), card, label).await;
        wait_until(|| async { (self.fake().dialogs().len() > opened).then_some(()) }).await;
        let answer = self.fake().submit_dialog(&thao_on_mattermost(), submission).await;
        assert_eq!(answer, json!({}), "the dialog closes");
    }
}

impl Person for OnMattermost {
    async fn say(&mut self, text: &str) {
        let post = self.fake().say(&thao_on_mattermost(), fake_mattermost::OPS, "O", text, self.thread.as_deref());
        self.thread.get_or_insert(post);
    }

    async fn sees(&mut self, text: &str) {
        let thread = self.thread.clone().expect("Thảo said something first");
        wait_until(|| async {
            self.fake().posts().into_iter().filter_map(|id| self.fake().post(&id)).find(|p| {
                p["user_id"] == fake_mattermost::BOT_ID && p["root_id"] == thread.as_str() && p["message"].as_str().is_some_and(|m| shown(m).contains(text))
            })
        })
        .await;
    }

    async fn decide(&mut self, choices: &[Choice<'_>]) {
        let card = self.card().await;
        let thao = thao_on_mattermost();
        if let [single] = choices {
            match single {
                Choice::Approve => _ = self.fake().click(&thao, &card, "✅ Approve").await,
                Choice::Reject => self.through_dialog(&card, "❌ Reject", json!({"reason": ""})).await,
                // Edit opens a dialog whose textarea holds the args; its submission decides.
                Choice::Edit(args) => self.through_dialog(&card, "✏️ Edit", json!({"args": args})).await,
            }
            return;
        }
        // Several actions: buttons per action, the card edited with each choice under
        // its action, then Submit.
        for (n, choice) in choices.iter().enumerate() {
            let shown = match choice {
                Choice::Approve => {
                    self.fake().click(&thao, &card, &format!("✅ Approve #{}", n + 1)).await;
                    "→ ✅"
                }
                Choice::Reject => {
                    self.through_dialog(&card, &format!("❌ Reject #{}", n + 1), json!({"reason": ""})).await;
                    "→ ❌"
                }
                Choice::Edit(_) => panic!("no scenario edits one of several actions; the Mattermost suite tests that"),
            };
            let under_action = || {
                let post = self.fake().post(&card).unwrap_or_default();
                let attachments = post["props"]["attachments"].as_array().cloned().unwrap_or_default();
                attachments.iter().filter_map(|a| a["text"].as_str().map(str::to_owned)).find(|t| t.contains(&format!("**{}. ", n + 1))).unwrap_or_default()
            };
            wait_until(|| async { under_action().contains(shown).then_some(()) }).await;
        }
        self.fake().click(&thao, &card, "📨 Submit").await;
    }

    fn agent(&self) -> &SimHandle {
        self.harness.sim()
    }

    async fn finish(mut self) {
        self.harness.stop_bridge().await;
        let errors = self.harness.mattermost().errors();
        assert!(errors.is_empty(), "Mattermost would have refused: {errors:?}");
        self.harness.shutdown().await;
    }
}

// --- Matrix: Thảo in an encrypted room with the bot, on a real Synapse. -------------

struct OnMatrix {
    harness: Harness,
    thao: MatrixPerson,
    bot: String,
    room: String,
    /// Thảo's first message: the thread the agent answers in.
    thread: Option<String>,
    _synapse: Synapse,
}

impl OnMatrix {
    async fn start() -> Self {
        let synapse = Synapse::start().await.expect("Synapse");
        let bot = synapse.register("hitl", false).await;
        let account = synapse.register("thao", false).await;
        let thao = MatrixPerson::login(&synapse.url(), &account.user_id, &account.password).await;
        let room = thao.create_room(&[&bot.user_id], true).await;
        let users = vec![format!("matrix:{}", account.user_id)];
        let mut harness = Harness::on(Chat::Headless).agent(20).tweak(move |settings| settings.access.users = users).build().await;
        let dir = harness.dir.path().to_owned();
        bridge_on_matrix(&mut harness.settings, &synapse.url(), &bot.user_id, &bot.password, &[&room], &dir);
        harness.boot().await;
        thao.wait_joined(&room, &bot.user_id).await;
        OnMatrix { harness, thao, bot: bot.user_id, room, thread: None, _synapse: synapse }
    }

    /// Whether `event` is the bot's, in Thảo's thread.
    fn in_thread(&self, event: &Value) -> bool {
        let thread = self.thread.as_deref().expect("Thảo said something first");
        event["sender"] == self.bot.as_str() && event["content"]["m.relates_to"]["event_id"] == thread
    }

    /// The card in Thảo's thread: its event id.
    async fn card(&self) -> String {
        let card = self.thao.wait_for(&self.room, |e| self.in_thread(e) && body_of(e).starts_with("🔐")).await;
        card["event_id"].as_str().expect("an event id").to_owned()
    }
}

impl Person for OnMatrix {
    async fn say(&mut self, text: &str) {
        match &self.thread {
            Some(root) => _ = self.thao.reply(&self.room, root, Some(root), text).await,
            None => self.thread = Some(self.thao.say(&self.room, text).await),
        }
    }

    async fn sees(&mut self, text: &str) {
        // Streamed text grows by edits: the newest content is what Thảo reads.
        wait_until(|| async {
            let events = self.thao.events(&self.room).await;
            let ours: Vec<&str> = events.iter().filter(|e| self.in_thread(e)).filter_map(|e| e["event_id"].as_str()).collect();
            let edit_of_ours = |e: &Value| e["content"]["m.relates_to"]["event_id"].as_str().is_some_and(|id| ours.contains(&id));
            // Read as shown: the word joiner after an `@` is invisible.
            let shown = |e: &Value| body_of(e).replace('\u{2060}', "");
            events.iter().any(|e| e["sender"] == self.bot.as_str() && (self.in_thread(e) || edit_of_ours(e)) && shown(e).contains(text)).then_some(())
        })
        .await;
    }

    async fn decide(&mut self, choices: &[Choice<'_>]) {
        let card = self.card().await;
        let (room, thread) = (self.room.clone(), self.thread.clone());
        if let [single] = choices {
            match single {
                Choice::Approve => _ = self.thao.react(&room, &card, "✅").await,
                Choice::Reject => _ = self.thao.react(&room, &card, "❌").await,
                Choice::Edit(args) => _ = self.thao.reply(&room, &card, thread.as_deref(), &format!("edit {args}")).await,
            }
            return;
        }
        // Several actions: a reply per action names it by number; 📨 sends them.
        for (n, choice) in choices.iter().enumerate() {
            let word = match choice {
                Choice::Approve => "approve",
                Choice::Reject => "reject",
                Choice::Edit(_) => panic!("no scenario edits one of several actions; the Matrix suite tests edits"),
            };
            self.thao.reply(&room, &card, thread.as_deref(), &format!("{word} {}", n + 1)).await;
        }
        self.thao.react(&room, &card, "📨").await;
    }

    fn agent(&self) -> &SimHandle {
        self.harness.sim()
    }

    async fn finish(self) {
        self.harness.shutdown().await;
    }
}
