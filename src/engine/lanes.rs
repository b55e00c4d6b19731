//! Outgoing work for platforms, one ordered lane per chat.
//!
//! The engine never waits on a platform: a slow chat (Telegram's per-group rate limit,
//! Discord retrying a 429) would otherwise hold up every other session. Each chat gets
//! a task that performs its jobs in the order the engine queued them, so within a chat
//! a request is always shown before its outcome, and text stays in order.
//!
//! A lane ends after a quiet spell, so a chat seen once costs nothing afterwards; at
//! shutdown every lane finishes what it holds, within a bounded wait.
//!
//! Every engine shard pushes here (a chat can show requests of several sessions), so
//! [`Lanes`] is shared: its map sits behind a lock held only to find or start a lane,
//! never across a platform call.
//!
//! A lane holds at most [`HELD_SHOWS`] requests to show whole. A flood into a chat
//! that sends slowly (Telegram's 20 messages a minute to a group) queues the rest by
//! id only, read from the store when their turn comes, so ten thousand waiting shows
//! cost about a hundred bytes each rather than the whole request.
//!
//! A text still streaming is reported again and again; a lane holds at most one report
//! per block waiting ([`Lanes::progress`] replaces the text of one still queued), so
//! a chat that sends slowly edits with the newest text instead of working through
//! stale ones.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::Instrument as _;

use super::{Platform, PlatformError};
use crate::interaction::policy::Mention;
use crate::interaction::updates::{Notice, ToolGroupStatus};
use crate::interaction::{Delivery, Interaction};
use crate::metrics::Metrics;
use crate::store::{ChatKey, MessageRef, Store};

/// The newest text of a streaming block that a lane has queued and not yet shown;
/// the lane takes it when the job runs.
pub type ProgressSlot = Arc<Mutex<Option<String>>>;

/// One thing to do in one chat.
#[derive(Debug)]
pub enum Job {
    Text(String),
    /// A text block still arriving: show what `latest` holds when the job runs (it
    /// may have been replaced by a newer report meanwhile, or emptied by the text's
    /// end).
    TextProgress {
        block: u64,
        latest: ProgressSlot,
    },
    /// The complete text of a block that reported progress.
    FinishText {
        block: u64,
        text: String,
    },
    ToolStatus(ToolGroupStatus),
    Notice(Notice),
    /// Show a new interaction and remember the message that shows it.
    Show(Interaction),
    /// [`Job::Show`] queued behind [`HELD_SHOWS`] others: the interaction is read from
    /// the store when the job runs (one settled meanwhile is not shown).
    ShowStored(String),
    /// Re-render every message of this chat that shows the interaction: those given,
    /// known when the job was queued, or, when none were, those the store has when
    /// the job runs (a `Show` queued before it has recorded its message by then). A
    /// chat with a message for a request gets no second one: a known message is all
    /// of them.
    Refresh(Interaction, Vec<MessageRef>),
    /// Re-render the interaction with this id as the store has it when the job runs
    /// (after a restart: a click handled meanwhile is never overwritten by the state
    /// read at start).
    Rerender(String),
    /// An escalation reminder that the interaction still waits, mentioning someone.
    Remind(Interaction, Mention),
    /// Signals once every job queued before it is done (e.g. before listing what a
    /// chat shows).
    Barrier(oneshot::Sender<()>),
}

/// How long a lane waits for more work before it ends.
const IDLE: Duration = Duration::from_secs(120);

/// Requests one lane holds whole while they wait to be shown; more are queued by id.
/// Enough for a burst to go out without a store read each.
pub const HELD_SHOWS: usize = if cfg!(test) { 4 } else { 64 };

struct Lane {
    jobs: mpsc::UnboundedSender<Job>,
    /// Shows queued and not yet done, whole or by id.
    shows: Arc<AtomicUsize>,
    /// The progress report queued per streaming block (its slot empties when the lane
    /// takes it).
    progress: HashMap<u64, ProgressSlot>,
    task: JoinHandle<()>,
}

fn slot_lock(slot: &ProgressSlot) -> MutexGuard<'_, Option<String>> {
    // Holds a plain value: a panic elsewhere cannot leave it half written.
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub struct Lanes {
    store: Store,
    /// Where a chat refused for good is counted ([`Metrics::show_refused`]).
    metrics: Metrics,
    /// Told the id of each request a chat refused for good, so the engine can end one
    /// shown nowhere ([`Lanes::tell_refusals`]).
    refusals: Option<mpsc::UnboundedSender<String>>,
    platforms: HashMap<&'static str, Arc<dyn Platform>>,
    lanes: Mutex<HashMap<ChatKey, Lane>>,
}

impl Lanes {
    pub fn new(store: Store, platforms: Vec<Arc<dyn Platform>>) -> Self {
        Self {
            store,
            metrics: Metrics::default(),
            refusals: None,
            platforms: platforms.into_iter().map(|p| (p.name(), p)).collect(),
            lanes: Mutex::new(HashMap::new()),
        }
    }

    /// Counts into `metrics` (the bridge's registry); lanes started before keep the old.
    pub fn set_metrics(&mut self, metrics: Metrics) {
        self.metrics = metrics;
    }

    /// Sends to `refusals` the id of each request a chat refused for good, once the
    /// refusal is stored.
    pub fn tell_refusals(&mut self, refusals: mpsc::UnboundedSender<String>) {
        self.refusals = Some(refusals);
    }

    /// The live lanes. A panic while the lock was held cannot leave the map half
    /// changed (each change is one insert or retain), so a poisoned lock is used as is.
    fn lanes(&self) -> MutexGuard<'_, HashMap<ChatKey, Lane>> {
        self.lanes.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `job` for `chat`. False when the chat is on a platform that is not
    /// enabled (logged; the job is dropped).
    pub fn push(&self, chat: &ChatKey, job: Job) -> bool {
        let mut lanes = self.lanes();
        self.push_locked(&mut lanes, chat, job)
    }

    /// Queues the progress of streaming block `block` for `chat`: the text of a
    /// report still queued there is replaced (one edit with the newest text), else a
    /// new report is queued. False as [`Lanes::push`].
    pub fn progress(&self, chat: &ChatKey, block: u64, text_so_far: String) -> bool {
        let mut lanes = self.lanes();
        if let Some(slot) = lanes.get(chat).filter(|lane| !lane.jobs.is_closed()).and_then(|lane| lane.progress.get(&block)) {
            let mut queued = slot_lock(slot);
            if queued.is_some() {
                *queued = Some(text_so_far);
                return true;
            }
        }
        let latest: ProgressSlot = Arc::new(Mutex::new(Some(text_so_far)));
        if !self.push_locked(&mut lanes, chat, Job::TextProgress { block, latest: latest.clone() }) {
            return false;
        }
        if let Some(lane) = lanes.get_mut(chat) {
            lane.progress.insert(block, latest);
        }
        true
    }

    fn push_locked(&self, lanes: &mut HashMap<ChatKey, Lane>, chat: &ChatKey, job: Job) -> bool {
        let is_show = matches!(job, Job::Show(_));
        if let Job::FinishText { block, .. } = &job
            && let Some(slot) = lanes.get_mut(chat).and_then(|lane| lane.progress.remove(block))
        {
            // The complete text follows at once: a report still queued is not shown.
            *slot_lock(&slot) = None;
        }
        let job = match lanes.get(chat) {
            Some(lane) => {
                let job = match job {
                    Job::Show(interaction) if lane.shows.fetch_add(1, Ordering::Relaxed) >= HELD_SHOWS => Job::ShowStored(interaction.id),
                    job => job,
                };
                match lane.jobs.send(job) {
                    Ok(()) => return true,
                    // The lane ended after a quiet spell: start a new one with the job.
                    Err(mpsc::error::SendError(job)) => job,
                }
            }
            None => job,
        };
        let Some(platform) = self.platforms.get(chat.platform.as_str()).cloned() else {
            tracing::warn!(platform = %chat.platform, "a chat is bound to a platform that is not enabled");
            return false;
        };
        // Forget lanes that ended, so the map holds only live chats.
        lanes.retain(|_, lane| !lane.jobs.is_closed());
        let (jobs, rx) = mpsc::unbounded_channel();
        let shows = Arc::new(AtomicUsize::new(usize::from(is_show)));
        // Cannot fail: the receiver is alive right here.
        let _ = jobs.send(job);
        let task = tokio::spawn(run(
            Sinks { store: self.store.clone(), metrics: self.metrics.clone(), refusals: self.refusals.clone() },
            platform,
            chat.clone(),
            rx,
            shows.clone(),
        ));
        lanes.insert(chat.clone(), Lane { jobs, shows, progress: HashMap::new(), task });
        true
    }

    /// Lets every lane finish the jobs it holds, waiting at most `limit` in all; what
    /// is left after that is logged and dropped (a request not shown yet is still in
    /// `pending_shows` and is shown after the restart).
    pub async fn drain(&self, limit: Duration) {
        let tasks: Vec<JoinHandle<()>> = self.lanes().drain().map(|(_, lane)| lane.task).collect();
        let waiting = tasks.len();
        let all = futures_util::future::join_all(tasks);
        if tokio::time::timeout(limit, all).await.is_err() {
            tracing::warn!(lanes = waiting, ?limit, "chat lanes did not finish in time; the rest is dropped");
        }
    }
}

impl Lanes {
    /// Resolves once the jobs queued so far for `chat` are done.
    pub fn barrier(&self, chat: &ChatKey) -> oneshot::Receiver<()> {
        let (reached, wait) = oneshot::channel();
        // A chat on no enabled platform has nothing queued: the barrier resolves at
        // once, because its sender is dropped.
        self.push(chat, Job::Barrier(reached));
        wait
    }
}

/// Where a lane records what its jobs did.
struct Sinks {
    store: Store,
    metrics: Metrics,
    refusals: Option<mpsc::UnboundedSender<String>>,
}

/// Performs one chat's jobs in order until the engine drops its lanes or the chat has
/// been quiet for [`IDLE`].
async fn run(sinks: Sinks, platform: Arc<dyn Platform>, chat: ChatKey, mut jobs: mpsc::UnboundedReceiver<Job>, shows: Arc<AtomicUsize>) {
    let perform_counted = async |job: Job| {
        let is_show = matches!(job, Job::Show(_) | Job::ShowStored(_));
        perform(&sinks, platform.as_ref(), &chat, job).await;
        if is_show {
            shows.fetch_sub(1, Ordering::Relaxed);
        }
    };
    loop {
        let job = match tokio::time::timeout(IDLE, jobs.recv()).await {
            Ok(Some(job)) => job,
            Ok(None) => return,
            Err(_) => {
                // Refuse new jobs first (the engine then starts a new lane), then do
                // whatever slipped in before that.
                jobs.close();
                while let Ok(job) = jobs.try_recv() {
                    perform_counted(job).await;
                }
                return;
            }
        };
        perform_counted(job).await;
    }
}

/// Performs one job; a job about an interaction runs in its span, so the platform's
/// lines (a refused send, a retry) carry its `approval_key`.
async fn perform(sinks: &Sinks, platform: &dyn Platform, chat: &ChatKey, job: Job) {
    let span = match &job {
        Job::Show(interaction) | Job::Refresh(interaction, _) | Job::Remind(interaction, _) => crate::logging::interaction_span(interaction),
        _ => tracing::Span::none(),
    };
    perform_job(sinks, platform, chat, job).instrument(span).await;
}

async fn perform_job(sinks: &Sinks, platform: &dyn Platform, chat: &ChatKey, job: Job) {
    let store = &sinks.store;
    let result = match job {
        Job::Text(text) => platform.send_text(chat, &text).await,
        Job::TextProgress { block, latest } => {
            let text = slot_lock(&latest).take();
            match text {
                Some(text) => platform.text_progress(chat, block, &text).await,
                // The complete text was queued meanwhile: it shows everything.
                None => Ok(()),
            }
        }
        Job::FinishText { block, text } => platform.finish_text(chat, block, &text).await,
        Job::ToolStatus(status) => platform.tool_status(chat, &status).await,
        Job::Notice(notice) => platform.send_notice(chat, &notice).await,
        Job::Show(interaction) => show(sinks, platform, chat, &interaction).await,
        Job::ShowStored(id) => match store.interaction(&id).await {
            Ok(Some(interaction)) if interaction.status.is_pending() => {
                let span = crate::logging::interaction_span(&interaction);
                show(sinks, platform, chat, &interaction).instrument(span).await
            }
            // Settled meanwhile: its settle dropped the show.
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::error!(error = %e, interaction = %id, "cannot load an interaction to show it; trying again later");
                // Gives the claim up, so a later round shows it.
                if let Err(e) = store.show_failed(&id, chat, crate::clock::now_ms(), &e.to_string()).await {
                    tracing::error!(error = %e, interaction = %id, "cannot record a failed show; it is retried after the claim lapses");
                }
                Ok(())
            }
        },
        Job::Refresh(interaction, messages) => refresh(store, platform, chat, &interaction, messages).await,
        Job::Remind(interaction, mention) => {
            // Read when the job runs: a `Show` queued before it is recorded by then.
            let card = match store.message_refs(&interaction.id).await {
                Ok(messages) => messages.into_iter().find(|m| m.chat == *chat),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot load the message a reminder replies to; sending it on its own");
                    None
                }
            };
            platform.send_reminder(super::Reminder::new(chat, &interaction, &mention, card.as_ref())).await
        }
        Job::Rerender(id) => match store.interaction(&id).await {
            Ok(Some(interaction)) => {
                let span = crate::logging::interaction_span(&interaction);
                refresh(store, platform, chat, &interaction, Vec::new()).instrument(span).await
            }
            Ok(None) => Ok(()),
            Err(e) => {
                tracing::error!(error = %e, interaction = %id, "cannot load an interaction to show it again");
                Ok(())
            }
        },
        Job::Barrier(reached) => {
            let _ = reached.send(());
            Ok(())
        }
    };
    if let Err(e) = result {
        tracing::error!(platform = platform.name(), chat = %chat.chat_id, error = %e, "platform call failed");
    }
}

/// Shows the interaction and settles its `pending_shows` row: removed with the new
/// message's reference; moved to the refused shows when the platform refused the chat
/// for good (never tried again there; counted); or kept with a backoff when the send
/// failed otherwise, so the engine tries again until it is shown or ends.
async fn show(sinks: &Sinks, platform: &dyn Platform, chat: &ChatKey, interaction: &Interaction) -> Result<(), PlatformError> {
    let store = &sinks.store;
    match platform.show_interaction(chat, interaction).await {
        Ok(message_id) => {
            let message = message_id.map(|message_id| MessageRef { interaction_id: interaction.id.clone(), chat: chat.clone(), message_id });
            // What it shows is recorded with it, for a platform that keeps messages.
            let revision = platform.keeps_messages().then_some(interaction.revision.0);
            if let Err(e) = store.shown_at(&interaction.id, chat, message.as_ref(), revision).await {
                // The message is out but cannot be edited later; say so loudly.
                tracing::error!(error = %e, interaction = %interaction.id, "cannot remember the message showing an interaction");
            }
            Ok(())
        }
        Err(ref e) if let Some(reason) = e.refusal() => {
            sinks.metrics.show_refused(platform.name());
            tracing::warn!(platform = platform.name(), chat = %chat.chat_id, interaction = %interaction.id, reason, "the platform refused the chat for good; the request is not shown there");
            match store.show_refused(&interaction.id, chat, crate::clock::now_ms(), reason).await {
                Ok(()) => {
                    if let Some(refusals) = &sinks.refusals {
                        // The engine gone (shutdown): a request shown nowhere waits for its deadline.
                        let _ = refusals.send(interaction.id.clone());
                    }
                }
                Err(store_error) => {
                    tracing::error!(error = %store_error, interaction = %interaction.id, "cannot record a refused show; it is tried again after the claim lapses")
                }
            }
            Ok(())
        }
        Err(e) => {
            if let Err(store_error) = store.show_failed(&interaction.id, chat, crate::clock::now_ms(), &e.to_string()).await {
                tracing::error!(error = %store_error, interaction = %interaction.id, "cannot record a failed show; it is retried after the claim lapses");
            }
            Err(e)
        }
    }
}

/// Edits the messages of this chat that show `interaction`: `known`, or when it is
/// empty, those the store has now, not when the job was queued, so a `Show` queued
/// just before is already recorded.
async fn refresh(store: &Store, platform: &dyn Platform, chat: &ChatKey, interaction: &Interaction, known: Vec<MessageRef>) -> Result<(), PlatformError> {
    let messages = if known.is_empty() {
        match store.message_refs(&interaction.id).await {
            Ok(messages) => messages,
            Err(e) => {
                tracing::error!(error = %e, "cannot load message references");
                return Ok(());
            }
        }
    } else {
        known
    };
    for message in messages.iter().filter(|m| m.chat == *chat) {
        platform.refresh_interaction(message, interaction).await?;
        note_shown(store, platform, message, interaction).await;
    }
    Ok(())
}

/// Records which revision of an interaction `message` now shows, so a restart edits it
/// again only if the interaction moved on: a pending request's card after a vote, and
/// a decided one's whose outcome a kill kept from the chat (its buttons would stay).
/// A platform that keeps no messages is left unrecorded: it prints everything pending
/// again after a restart.
///
/// A decided request's card waiting for the backend's proof of delivery is not
/// recorded: the proof edits it again within moments, and that edit records it. A
/// kill in between costs one edit after the restart, and a decision one write less.
async fn note_shown(store: &Store, platform: &dyn Platform, message: &MessageRef, interaction: &Interaction) {
    if !platform.keeps_messages() || (!interaction.status.is_pending() && interaction.delivery == Delivery::Queued) {
        return;
    }
    if let Err(e) = store.mark_shown(message, interaction.revision.0).await {
        // Costs at most an edit after the next restart.
        tracing::warn!(error = %e, interaction = %interaction.id, "cannot record what a message shows");
    }
}
