//! Where requests are shown, read together: every refresh of a card asks where its
//! request is or may yet be shown ([`Store::showing`]), and a burst of decisions asks
//! it hundreds of times at once. The asks that arrive while a read is under way share
//! the next one: one statement for all of them instead of one each, as the group
//! commit does for writes. A lone ask is read at once, alone: nothing waits for
//! company.
//!
//! Each ask gets exactly what a read of its own would return; nothing here decides
//! anything about what the rows mean.

use std::collections::{BTreeSet, HashMap};

use sqlx::AnyPool;
use tokio::sync::{mpsc, oneshot};

use super::Store;
use super::chats::ChatKey;
use super::error::{Result, StoreError};
use super::group_commit::next_batch;
use super::json::{self, skip_corrupt};
use super::messages::MessageRef;
use super::placeholders::{Marks, run_time_statement};
use super::row::column;

/// At most this many asks share one read (each adds two or three values).
const MAX_BATCH: usize = 256;

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
struct Ask {
    session_id: String,
    interaction_id: String,
}

struct Queued {
    ask: Ask,
    answer: oneshot::Sender<Result<Showing>>,
}

/// The queue to the reader task. Cheap to clone; the task ends with the last clone.
#[derive(Clone)]
pub(super) struct ShowingReads {
    queue: mpsc::UnboundedSender<Queued>,
}

impl ShowingReads {
    /// Starts the reader task on the current Tokio runtime.
    pub fn start(pool: AnyPool) -> Self {
        let (queue, asks) = mpsc::unbounded_channel();
        tokio::spawn(run(pool, asks));
        Self { queue }
    }
}

impl Store {
    /// Where an interaction of `session_id` is or may yet be shown: the chats bound to
    /// the session, in the order they were bound; the messages showing
    /// `interaction_id`, in the order they were sent; and, when it was pushed over the
    /// HTTP API, the targets it was pushed to. Read with the asks made meanwhile.
    pub async fn showing(&self, session_id: &str, interaction_id: &str) -> Result<Showing> {
        let ask = Ask { session_id: session_id.to_owned(), interaction_id: interaction_id.to_owned() };
        let (answer, answered) = oneshot::channel();
        match self.showing_reads.queue.send(Queued { ask, answer }) {
            Ok(()) => answered.await.unwrap_or(Err(StoreError::Query { what: "list where an interaction is shown", source: sqlx::Error::PoolClosed })),
            // The reader task is gone (its runtime ended): read alone.
            Err(mpsc::error::SendError(queued)) => read(&self.pool, std::slice::from_ref(&queued.ask)).await.map(|mut all| all.remove(0)),
        }
    }
}

/// Takes whatever is queued, up to [`MAX_BATCH`], reads it together, answers each.
async fn run(pool: AnyPool, mut asks: mpsc::UnboundedReceiver<Queued>) {
    while let Some(batch) = next_batch(&mut asks, MAX_BATCH).await {
        let (asked, answers): (Vec<Ask>, Vec<_>) = batch.into_iter().map(|q| (q.ask, q.answer)).unzip();
        match read(&pool, &asked).await {
            Ok(all) => {
                for (answer, showing) in answers.into_iter().zip(all) {
                    let _ = answer.send(Ok(showing));
                }
            }
            // Read again ask by ask, so each gets its own answer or error.
            Err(e) => {
                tracing::warn!(error = %e, asks = asked.len(), "a shared read of where requests are shown failed; reading them one by one");
                for (ask, answer) in asked.iter().zip(answers) {
                    let _ = answer.send(read(&pool, std::slice::from_ref(ask)).await.map(|mut one| one.remove(0)));
                }
            }
        }
    }
}

/// What each of `asks` shows, in their order, in one statement.
async fn read(pool: &AnyPool, asks: &[Ask]) -> Result<Vec<Showing>> {
    let sessions: Vec<&str> = asks.iter().map(|a| a.session_id.as_str()).collect::<BTreeSet<_>>().into_iter().collect();
    let ids: Vec<&str> = asks.iter().map(|a| a.interaction_id.as_str()).collect::<BTreeSet<_>>().into_iter().collect();
    let mut conn = pool.acquire().await.map_err(StoreError::query("list where an interaction is shown"))?;
    let marks = Marks::of(&conn);
    // Values are bound in the order their marks appear: sessions, then the ids twice.
    let (s, i) = (sessions.len(), ids.len());
    let sql = format!(
        "SELECT session_id AS of_session, NULL AS of_interaction, platform, chat_id, thread_id, NULL AS message_id, bound_at_ms, 0 AS ref_id, NULL AS targets
           FROM chat_bindings WHERE session_id IN ({})
         UNION ALL
         SELECT NULL, interaction_id, platform, chat_id, thread_id, message_id, 0, id, NULL FROM message_refs WHERE interaction_id IN ({})
         UNION ALL
         SELECT NULL, interaction_id, '', '', '', NULL, 0, 0, targets FROM api_requests WHERE interaction_id IN ({})
         ORDER BY bound_at_ms, ref_id, platform, chat_id, thread_id",
        marks.list(1, s),
        marks.list(1 + s, i),
        marks.list(1 + s + i, i)
    );
    // Safe: the text is only value marks; every value is bound.
    let mut select = run_time_statement(sql);
    for value in sessions.iter().chain(&ids).chain(&ids) {
        select = select.bind(*value);
    }
    let rows = select.fetch_all(&mut *conn).await.map_err(StoreError::query("list where an interaction is shown"))?;
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
            &store.pool,
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
