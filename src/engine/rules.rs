//! `/rules` in a chat: the remembered approvals ("approve for this session", "always
//! approve") that would answer a request in the chat's session without asking, and
//! `/rules revoke ID` to take one back.
//!
//! A chat lists the rules of its current session on the chat backend (its session
//! rules and the backend's always rules, as [`crate::store::Store::rules_for`]); a chat
//! with no session yet lists the always rules. Revoking is for a configured approver
//! or the person who set the rule; anyone else is refused, and the attempt is audited.
//! The store's conditional revoke makes a rule revoked (and audited) once, whichever
//! replica or CLI gets there first. What people read is in
//! [`crate::texts::rules`], worded by the platforms.

use super::{EngineError, Shard, now_ms};
use crate::interaction::{Actor, RememberedRule};
use crate::store::{AuditEntry, ChatKey};

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
    use crate::interaction::RememberScope;
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
        let engine = Engine::start(&settings.engine_config(), store.clone(), vec![], Connectors::new(vec![]), backend_rx, requests).await.unwrap();
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
}
