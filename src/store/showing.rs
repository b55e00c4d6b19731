//! Where requests are shown: every refresh of a card asks where its request is or may
//! yet be shown ([`Store::showing`]), and a burst of decisions asks it hundreds of
//! times at once, so the asks share their reads ([`SharedReads`](super::shared_reads::SharedReads)). Each ask gets
//! exactly what a read of its own would return.

use std::collections::{BTreeSet, HashMap};

use futures_util::future::BoxFuture;
use sqlx::AnyConnection;

use super::Store;
use super::chats::ChatKey;
use super::error::{Result, StoreError};
use super::json::{self, skip_corrupt};
use super::message_ref::MessageRef;
use super::placeholders::{Marks, list_statement, padded_len, padded_to};
use super::row::column;
use super::shared_reads::SharedRead;

/// Where an interaction is or may yet be shown ([`Store::showing`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Showing {
    /// The chats bound to its session, in the order they were bound.
    pub bound: Vec<ChatKey>,
    /// The messages showing it, in the order they were sent.
    pub messages: Vec<MessageRef>,
    /// The targets it was pushed to over the HTTP API (none for a chat's turn).
    pub targets: Vec<ChatKey>,
}

/// One ask: the interaction and its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Ask {
    session_id: String,
    interaction_id: String,
}

/// Where requests are shown, as a read that asks share ([`SharedReads`](super::shared_reads::SharedReads)).
pub(super) struct ShowingRead;

impl SharedRead for ShowingRead {
    type Ask = Ask;
    type Answer = Showing;
    const WHAT: &'static str = "list where an interaction is shown";

    fn read<'a>(conn: &'a mut AnyConnection, asks: &'a [Ask]) -> BoxFuture<'a, Result<Vec<Showing>>> {
        Box::pin(read(conn, asks))
    }
}

impl Store {
    /// Where an interaction of `session_id` is or may yet be shown: the chats bound to
    /// the session, in the order they were bound; the messages showing
    /// `interaction_id`, in the order they were sent; and, when it was pushed over the
    /// HTTP API, the targets it was pushed to. Read with the asks made meanwhile.
    pub async fn showing(&self, session_id: &str, interaction_id: &str) -> Result<Showing> {
        self.showing_reads.ask(Ask { session_id: session_id.to_owned(), interaction_id: interaction_id.to_owned() }).await
    }
}

/// What each of `asks` shows, in their order, in one statement.
async fn read(conn: &mut AnyConnection, asks: &[Ask]) -> Result<Vec<Showing>> {
    let sessions: Vec<&str> = asks.iter().map(|a| a.session_id.as_str()).collect::<BTreeSet<_>>().into_iter().collect();
    let ids: Vec<&str> = asks.iter().map(|a| a.interaction_id.as_str()).collect::<BTreeSet<_>>().into_iter().collect();
    let marks = Marks::of(conn);
    // Values are bound in the order their marks appear: sessions, then the ids twice,
    // every list padded to one length, so the statement is one of a few (one per
    // length) kept prepared.
    let len = padded_len(sessions.len().max(ids.len()));
    let sql = format!(
        "SELECT session_id AS of_session, NULL AS of_interaction, platform, chat_id, thread_id, NULL AS message_id, bound_at_ms, 0 AS ref_id, NULL AS targets
           FROM chat_bindings WHERE session_id IN ({})
         UNION ALL
         SELECT NULL, interaction_id, platform, chat_id, thread_id, message_id, 0, id, NULL FROM message_refs WHERE interaction_id IN ({})
         UNION ALL
         SELECT NULL, interaction_id, '', '', '', NULL, 0, 0, targets FROM api_requests WHERE interaction_id IN ({})
         ORDER BY bound_at_ms, ref_id, platform, chat_id, thread_id",
        marks.list(1, len),
        marks.list(1 + len, len),
        marks.list(1 + 2 * len, len)
    );
    // Safe: the text is only value marks; every value is bound.
    let mut select = list_statement(sql);
    for value in padded_to(&sessions, len).chain(padded_to(&ids, len)).chain(padded_to(&ids, len)) {
        select = select.bind(*value);
    }
    let rows = select.fetch_all(&mut *conn).await.map_err(StoreError::query(ShowingRead::WHAT))?;
    // Which asks each session and each interaction answers (an id may be asked twice).
    let mut of_session: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut of_interaction: HashMap<&str, Vec<usize>> = HashMap::new();
    for (n, ask) in asks.iter().enumerate() {
        of_session.entry(&ask.session_id).or_default().push(n);
        of_interaction.entry(&ask.interaction_id).or_default().push(n);
    }
    let mut all = vec![Showing::default(); asks.len()];
    for row in &rows {
        if let Some(session) = column::<Option<String>>(row, "of_session")? {
            let chat = ChatKey::from_row(row)?;
            for &n in of_session.get(session.as_str()).into_iter().flatten() {
                all[n].bound.push(chat.clone());
            }
            continue;
        }
        let interaction_id: String = column(row, "of_interaction")?;
        let askers = of_interaction.get(interaction_id.as_str()).into_iter().flatten();
        match column::<Option<String>>(row, "targets")? {
            Some(targets) => {
                let targets: Vec<ChatKey> = skip_corrupt(json::decode(&targets, "request targets", &interaction_id)).unwrap_or_default();
                for &n in askers {
                    all[n].targets = targets.clone();
                }
            }
            None => {
                let message = MessageRef { interaction_id: interaction_id.clone(), chat: ChatKey::from_row(row)?, message_id: column(row, "message_id")? };
                for &n in askers {
                    all[n].messages.push(message.clone());
                }
            }
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use futures_util::future::join_all;

    use crate::store::{ChatKey, MessageRef, Store};

    /// Asks made together are answered as each would be alone: another ask's chats
    /// and messages never leak into an answer, and a session's chats go to every ask
    /// of that session.
    #[tokio::test]
    async fn asks_read_together_get_what_each_would_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::connect(&format!("sqlite://{}", dir.path().join("s.db").display())).await.unwrap();
        let ids = ["i-a1", "i-a2", "i-b1"];
        for (n, id) in ids.iter().enumerate() {
            let session = if id.starts_with("i-a") { "A" } else { "B" };
            let action = crate::protocol::ActionRequest { name: "deploy".into(), args: serde_json::json!({"n": n}), description: None, tool_use_id: None };
            let request = crate::interaction::RequestBuilder::start(&format!("k{n}"), vec![action], vec![], Some(600))
                .finish(crate::interaction::TimeoutDefaults::default())
                .unwrap();
            assert!(store.insert_interaction(&crate::interaction::Interaction::new((*id).into(), session.into(), request, None, 0)).await.unwrap());
        }
        let (a_chat, b_chat) = (ChatKey::new("telegram", "-1", None), ChatKey::new("discord", "2", Some("t")));
        store.bind_chat(&a_chat, "A", 1).await.unwrap();
        store.bind_chat(&b_chat, "B", 1).await.unwrap();
        let message = |id: &str, chat: &ChatKey, m: &str| MessageRef { interaction_id: id.into(), chat: chat.clone(), message_id: m.into() };
        for r in [message("i-a1", &a_chat, "10"), message("i-a1", &b_chat, "11"), message("i-b1", &b_chat, "12")] {
            store.add_message_ref(&r).await.unwrap();
        }
        let alone = join_all(ids.iter().map(|id| {
            let store = store.clone();
            async move { store.showing(if id.starts_with("i-a") { "A" } else { "B" }, id).await.unwrap() }
        }))
        .await;
        let batch = super::read(
            &mut store.pool.acquire().await.unwrap(),
            &ids.iter()
                .map(|id| super::Ask { session_id: if id.starts_with("i-a") { "A" } else { "B" }.into(), interaction_id: (*id).into() })
                .collect::<Vec<_>>(),
        )
        .await
        .unwrap();
        assert_eq!(alone, batch);
        assert_eq!(batch[0].bound, std::slice::from_ref(&a_chat));
        assert_eq!(batch[0].messages, [message("i-a1", &a_chat, "10"), message("i-a1", &b_chat, "11")]);
        assert_eq!((batch[1].bound.as_slice(), batch[1].messages.as_slice()), (std::slice::from_ref(&a_chat), &[][..]));
        assert_eq!((batch[2].bound.as_slice(), batch[2].messages.as_slice()), (std::slice::from_ref(&b_chat), &[message("i-b1", &b_chat, "12")][..]));
        store.close().await;
    }
}
