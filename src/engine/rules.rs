//! `/rules` in a chat: the remembered approvals ("approve for this session", "always
//! approve") that would answer a request in the chat's session without asking, and
//! `/rules revoke ID` to take one back.
//!
//! A chat lists the rules of its current session on the chat backend (its session
//! rules and the backend's always rules, as [`crate::store::Store::rules_for`]); a chat
//! with no session yet lists the always rules. Revoking is for a configured approver
//! or the person who set the rule; anyone else is refused, and the attempt is audited.
//! The store's conditional revoke makes a rule revoked (and audited) once, whichever
//! replica or CLI gets there first. The texts people read are built here too, in
//! their language, so every platform says the same.

use super::{EngineError, Shard, now_ms};
use crate::interaction::{Actor, RememberScope, RememberedRule};
use crate::platform::locale::{self, Locale};
use crate::store::{AuditEntry, ChatKey};

/// A chat lists at most this many rules (newest last); the CLI lists all of them.
/// Ten lines stay well inside Discord's 2000 characters and Telegram's 4096.
const MAX_LISTED: usize = 10;

/// Args longer than this (as compact JSON) are cut in a chat listing.
const MAX_ARGS_CHARS: usize = 60;

/// Why `/rules revoke ID` changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum RevokeRefusal {
    /// No active rule has this id (unknown, or revoked already).
    #[error("no active rule has id {0:?}")]
    Unknown(String),
    /// Neither a configured approver nor the person who set the rule.
    #[error("{NOT_ALLOWED}")]
    NotAllowed,
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// The refusal as the audit log words it.
pub const NOT_ALLOWED: &str = "only an approver or the person who set it may revoke a rule";

impl From<crate::store::StoreError> for RevokeRefusal {
    fn from(e: crate::store::StoreError) -> Self {
        RevokeRefusal::Engine(e.into())
    }
}

impl RevokeRefusal {
    /// As the person reads it; `None` for an internal failure (the platform's generic
    /// "something went wrong" fits better, and the error is logged).
    pub fn notice(&self, locale: Locale) -> Option<String> {
        Some(match (self, locale) {
            (RevokeRefusal::Unknown(id), Locale::En) => format!("No active rule has id {id}. /rules lists them."),
            (RevokeRefusal::Unknown(id), Locale::Vi) => format!("Không có quy tắc nào đang hiệu lực với mã {id}. Gõ /rules để xem danh sách."),
            (RevokeRefusal::Unknown(id), Locale::Zh) => format!("没有编号为 {id} 的有效规则。/rules 可查看列表。"),
            (RevokeRefusal::NotAllowed, Locale::En) => "Only an approver or the person who set a rule may revoke it.".to_owned(),
            (RevokeRefusal::NotAllowed, Locale::Vi) => "Chỉ người duyệt hoặc người đặt quy tắc mới được thu hồi nó.".to_owned(),
            (RevokeRefusal::NotAllowed, Locale::Zh) => "只有审批人或设置该规则的人可以撤销它。".to_owned(),
            (RevokeRefusal::Engine(e), _) => {
                tracing::error!(error = %e, "cannot revoke a rule");
                return None;
            }
        })
    }
}

/// `/rules revoke` without an id.
pub fn revoke_usage(locale: Locale) -> &'static str {
    match locale {
        Locale::En => "Usage: /rules revoke ID (the ids are in /rules).",
        Locale::Vi => "Cách dùng: /rules revoke MÃ (mã có trong /rules).",
        Locale::Zh => "用法：/rules revoke 编号（编号见 /rules）。",
    }
}

/// The confirmation after a revoke.
pub fn revoked_notice(locale: Locale, rule: &RememberedRule) -> String {
    match locale {
        Locale::En => format!("Rule {} revoked: {} will be asked again.", rule.id, rule.tool),
        Locale::Vi => format!("Đã thu hồi quy tắc {}: {} sẽ lại được hỏi duyệt.", rule.id, rule.tool),
        Locale::Zh => format!("已撤销规则 {}：{} 将重新请求审批。", rule.id, rule.tool),
    }
}

/// The `/rules` listing: one line per rule with its id (what `/rules revoke` takes),
/// tool, args, scope, who set it and when; or a line saying there are none.
pub fn rules_notice(locale: Locale, rules: &[RememberedRule]) -> String {
    if rules.is_empty() {
        return match locale {
            Locale::En => "No remembered approvals apply here.",
            Locale::Vi => "Không có phê duyệt đã ghi nhớ nào áp dụng ở đây.",
            Locale::Zh => "此处没有适用的已记住的批准。",
        }
        .to_owned();
    }
    let title = match locale {
        Locale::En => "Approved without asking here:",
        Locale::Vi => "Được duyệt tự động ở đây:",
        Locale::Zh => "此处无需询问即批准：",
    };
    let mut lines = vec![title.to_owned()];
    for rule in rules.iter().take(MAX_LISTED) {
        lines.push(rule_line(locale, rule));
    }
    if rules.len() > MAX_LISTED {
        let more = rules.len() - MAX_LISTED;
        lines.push(match locale {
            Locale::En => format!("…and {more} more (hitl-bridge rules lists them all)."),
            Locale::Vi => format!("…và {more} quy tắc khác (hitl-bridge rules liệt kê tất cả)."),
            Locale::Zh => format!("……还有 {more} 条（hitl-bridge rules 可列出全部）。"),
        });
    }
    lines.push(
        match locale {
            Locale::En => "Revoke one with /rules revoke ID.",
            Locale::Vi => "Thu hồi bằng /rules revoke MÃ.",
            Locale::Zh => "用 /rules revoke 编号 撤销。",
        }
        .to_owned(),
    );
    lines.join("\n")
}

/// `• a1b2c3d4e5f6 · execute_trade {"symbol":"VNM"} · this session · Thảo, 08:30 UTC`.
fn rule_line(locale: Locale, rule: &RememberedRule) -> String {
    let args = match &rule.args {
        Some(args) => cut(&args.to_string(), MAX_ARGS_CHARS),
        None => match locale {
            Locale::En => "(any args)",
            Locale::Vi => "(mọi tham số)",
            Locale::Zh => "（任意参数）",
        }
        .to_owned(),
    };
    let scope = match (rule.scope, locale) {
        (RememberScope::Session, Locale::En) => "this session",
        (RememberScope::Session, Locale::Vi) => "phiên này",
        (RememberScope::Session, Locale::Zh) => "本会话",
        (RememberScope::Always, Locale::En) => "always",
        (RememberScope::Always, Locale::Vi) => "luôn luôn",
        (RememberScope::Always, Locale::Zh) => "始终",
    };
    format!("• {} · {} {args} · {scope} · {}, {}", rule.id, rule.tool, rule.set_by.name, locale::clock(rule.set_at_ms))
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

impl Shard {
    /// `/rules` in `chat`: the active rules that would answer a request in its session.
    pub(super) async fn rules_in_chat(&self, chat: &ChatKey, actor: &Actor) -> Result<Vec<RememberedRule>, EngineError> {
        let session = self.store.session_for_chat(chat).await?;
        tracing::debug!(platform = %chat.platform, chat = %chat.chat_id, user = %actor.user_id, session = ?session, "listing rules");
        // Without a session only the always rules can apply; no session has an empty id.
        Ok(self.store.rules_for(&self.backend_kind, session.as_deref().unwrap_or_default()).await?)
    }

    /// `/rules revoke ID` by `actor` in `chat`: see the module doc.
    pub(super) async fn revoke_in_chat(&self, chat: &ChatKey, actor: &Actor, rule_id: &str) -> Result<RememberedRule, RevokeRefusal> {
        let now = now_ms();
        let Some(rule) = self.store.active_rule(rule_id).await? else { return Err(RevokeRefusal::Unknown(rule_id.to_owned())) };
        if !(self.policy.is_approver(actor) || rule.set_by.is_same_person(actor)) {
            tracing::info!(platform = %chat.platform, chat = %chat.chat_id, user = %actor.user_id, rule = %rule.id, "refused: may not revoke a rule");
            let entry = AuditEntry::for_refused_revoke(&rule, actor, NOT_ALLOWED, now);
            if let Err(e) = self.store.append_audit(&entry).await {
                tracing::error!(error = %e, "cannot audit a refused revoke");
            }
            return Err(RevokeRefusal::NotAllowed);
        }
        match self.store.revoke_rule_as(rule_id, actor, now).await? {
            Some(rule) => {
                tracing::info!(rule = %rule.id, tool = %rule.tool, scope = rule.scope.as_str(), by = %actor.user_id, "rule revoked");
                Ok(rule)
            }
            // Revoked by someone else since it was read.
            None => Err(RevokeRefusal::Unknown(rule_id.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::sync::{mpsc, oneshot};

    use super::*;
    use crate::backend::Connectors;
    use crate::engine::{Engine, EngineHandle};
    use crate::store::Store;

    /// 2025-06-01T08:30:00Z.
    const T0: i64 = 1_748_766_600_000;

    fn thao() -> Actor {
        Actor::new("telegram", "1", "Thảo")
    }

    fn lan() -> Actor {
        Actor::new("telegram", "2", "Lan")
    }

    fn chat(n: usize) -> ChatKey {
        ChatKey::new("telegram", &format!("c{n}"), None)
    }

    fn rule(id: &str, scope: RememberScope, session: Option<&str>, backend: &str, set_by: Actor, at: i64) -> RememberedRule {
        RememberedRule {
            id: id.into(),
            scope,
            tool: "execute_trade".into(),
            args: Some(json!({"symbol": "VNM"})),
            session_id: session.map(str::to_owned),
            backend: backend.into(),
            set_by,
            set_at_ms: at,
            policy: "trades".into(),
        }
    }

    /// An engine on a fresh SQLite file with `telegram:9` as the configured approver,
    /// chat c0 bound to session s0; no platform, no connector.
    async fn engine() -> (EngineHandle, Store, oneshot::Sender<()>, tokio::task::JoinHandle<()>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("bridge.db").display());
        let mut settings = crate::config::Settings::from_pairs(&[("backend.url", "ws://127.0.0.1:9/ws/{session_id}"), ("store.url", url.as_str())]).unwrap();
        settings.access.approvers = vec!["telegram:9".into()];
        let store = Store::connect(&url).await.unwrap();
        store.bind_chat(&chat(0), "s0", 0).await.unwrap();
        let (handle, requests) = EngineHandle::channel();
        let (_backend, backend_rx) = mpsc::channel(8);
        let engine = Engine::start(&settings, store.clone(), vec![], Connectors::new(vec![]), backend_rx, requests).await.unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(engine.run(async move {
            let _ = stopped.await;
        }));
        (handle, store, stop, task, dir)
    }

    #[tokio::test]
    async fn a_chat_lists_its_sessions_rules_and_only_an_approver_or_the_setter_revokes() {
        let (engine, store, stop, task, _dir) = engine().await;
        let mine = rule("r-mine", RememberScope::Session, Some("s0"), "stream", thao(), T0 + 2);
        let always = rule("r-always", RememberScope::Always, None, "stream", lan(), T0 + 1);
        let elsewhere = rule("r-s1", RememberScope::Session, Some("s1"), "stream", thao(), T0 + 3);
        let kimi = rule("r-kimi", RememberScope::Always, None, "kimi", lan(), T0 + 4);
        for r in [&mine, &always, &elsewhere, &kimi] {
            store.save_rule(r).await.unwrap();
        }

        // The chat's session on the configured backend (stream); no session: always rules.
        assert_eq!(engine.rules(chat(0), thao()).await.unwrap(), vec![always.clone(), mine.clone()]);
        assert_eq!(engine.rules(chat(7), thao()).await.unwrap(), vec![always.clone()]);

        // Mallory may not: refused, audited, nothing revoked.
        let mallory = Actor::new("telegram", "666", "Mallory");
        let refused = engine.revoke_rule(chat(0), mallory.clone(), "r-always").await;
        assert!(matches!(refused, Err(RevokeRefusal::NotAllowed)), "{refused:?}");
        assert_eq!(store.active_rules().await.unwrap().len(), 4);
        let audit = store.audit_page(i64::MIN, None, 10).await.unwrap().rows;
        let [row] = audit.as_slice() else { panic!("one refusal audited, got {audit:?}") };
        assert_eq!(row.entry, AuditEntry::for_refused_revoke(&always, &mallory, NOT_ALLOWED, row.entry.at_ms));

        // The setter revokes her own rule; the approver anyone's.
        assert_eq!(engine.revoke_rule(chat(0), thao(), "r-mine").await.unwrap(), mine);
        let boss = Actor::new("telegram", "9", "Boss");
        assert_eq!(engine.revoke_rule(chat(0), boss.clone(), "r-always").await.unwrap(), always);
        assert!(engine.rules(chat(0), thao()).await.unwrap().is_empty());
        assert_eq!(store.active_rules().await.unwrap(), vec![elsewhere, kimi]);
        let outcomes: Vec<String> = store.audit_page(i64::MIN, None, 10).await.unwrap().rows.into_iter().map(|r| r.entry.outcome).collect();
        assert_eq!(outcomes, ["refused", "rule_revoked", "rule_revoked"]);

        // Gone, or never there.
        for id in ["r-always", "nope"] {
            let again = engine.revoke_rule(chat(0), boss.clone(), id).await;
            assert!(matches!(&again, Err(RevokeRefusal::Unknown(i)) if i == id), "{again:?}");
        }
        let _ = stop.send(());
        task.await.unwrap();
    }

    #[test]
    fn the_listing_and_the_notices_read_well() {
        let rules = [
            rule("a1b2c3d4e5f6", RememberScope::Session, Some("s0"), "stream", thao(), T0),
            RememberedRule { args: None, tool: "read_file".into(), ..rule("0f9e8d7c6b5a", RememberScope::Always, None, "stream", lan(), T0 + 90_000) },
        ];
        assert_eq!(
            rules_notice(Locale::En, &rules),
            "Approved without asking here:\n\
             • a1b2c3d4e5f6 · execute_trade {\"symbol\":\"VNM\"} · this session · Thảo, 08:30 UTC\n\
             • 0f9e8d7c6b5a · read_file (any args) · always · Lan, 08:31 UTC\n\
             Revoke one with /rules revoke ID."
        );
        assert_eq!(rules_notice(Locale::Vi, &[]), "Không có phê duyệt đã ghi nhớ nào áp dụng ở đây.");
        let many: Vec<RememberedRule> = (0..12).map(|n| rule(&format!("r{n}"), RememberScope::Always, None, "stream", lan(), T0)).collect();
        let listed = rules_notice(Locale::En, &many);
        assert_eq!(listed.lines().count(), 1 + MAX_LISTED + 2);
        assert!(listed.contains("…and 2 more (hitl-bridge rules lists them all)."), "{listed}");
        assert_eq!(revoked_notice(Locale::En, &rules[0]), "Rule a1b2c3d4e5f6 revoked: execute_trade will be asked again.");
        assert_eq!(RevokeRefusal::NotAllowed.notice(Locale::En).as_deref(), Some("Only an approver or the person who set a rule may revoke it."));
        assert_eq!(RevokeRefusal::Unknown("x".into()).notice(Locale::En).as_deref(), Some("No active rule has id x. /rules lists them."));
        assert_eq!(RevokeRefusal::Engine(EngineError::Stopped).notice(Locale::En), None);
        assert_eq!(cut(&"x".repeat(61), MAX_ARGS_CHARS).chars().count(), MAX_ARGS_CHARS);
    }

    /// Rules are stored under `BackendKind::as_str`: it must be the config's name.
    #[test]
    fn the_backend_kind_is_the_config_name() {
        use crate::config::BackendKind::*;
        for kind in [Stream, ClaudeCode, Agno, Kimi, Langgraph] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }
}
