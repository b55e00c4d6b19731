//! The terminal adapter, for the demo and the tests: agent output and requests go to
//! a writer (stdout), answers come from a line reader (stdin, a pipe or a test). It
//! works without a TTY: every prompt is one line and every answer one line back.
//!
//! Requests are answered one at a time, in arrival order; the current step lives here
//! (which action or question is being asked), what an answer means is the core's call.

pub mod address;
pub mod descriptor;
pub mod input;
pub mod render;
pub mod settings;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use self::input::{Parsed, Step};
use self::settings::ConsoleSettings;
use super::kit::commands;
use super::kit::refusals::Refused;
use super::kit::reminder;
use super::locale::Locale;
use super::{Platform, PlatformError};
use crate::engine::Reminder;
use crate::engine::{ActOutcome, CommandOutcome, EngineError, EngineHandle};
use crate::interaction::command::ChatCommand;
use crate::interaction::updates::{Notice, ToolGroupStatus};
use crate::interaction::{Actor, Draft, Interaction, RequestKind, UserAction, readable};
use crate::store::{ChatKey, MessageRef};

pub const PLATFORM: &str = "console";

type Writer = Box<dyn AsyncWrite + Send + Unpin>;

pub struct Console {
    actor: Actor,
    out: tokio::sync::Mutex<Writer>,
    /// Interactions waiting for answers, the first one being asked.
    queue: Mutex<VecDeque<(Interaction, Step)>>,
}

impl Console {
    pub fn new(settings: &ConsoleSettings, out: impl AsyncWrite + Send + Unpin + 'static) -> Arc<Self> {
        Arc::new(Self {
            actor: Actor::new(PLATFORM, &settings.user_id, &settings.user_name),
            out: tokio::sync::Mutex::new(Box::new(out)),
            queue: Mutex::new(VecDeque::new()),
        })
    }

    /// The one chat the console has.
    pub fn chat() -> ChatKey {
        ChatKey::new(PLATFORM, "stdin", None)
    }

    async fn print(&self, text: &str) -> Result<(), PlatformError> {
        let mut out = self.out.lock().await;
        let write = async {
            out.write_all(text.as_bytes()).await?;
            out.write_all(b"\n").await?;
            out.flush().await
        };
        write.await.map_err(|e| PlatformError::Send { platform: PLATFORM, message: e.to_string() })
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<(Interaction, Step)>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The prompt for the front of the queue, if any.
    fn current_prompt(&self) -> Option<String> {
        let queue = self.queue();
        let (interaction, step) = queue.front()?;
        Some(prompt(interaction, *step))
    }

    /// Reads lines until the input ends or `/quit`. Each line answers the current
    /// request if there is one, else it is a chat message (or `/new`, `/cancel`,
    /// `/rules`, `/rules revoke ID`).
    pub async fn run(self: Arc<Self>, input: impl AsyncBufRead + Unpin, engine: EngineHandle) -> Result<(), PlatformError> {
        let mut lines = input.lines();
        while let Some(line) = lines.next_line().await.map_err(|e| PlatformError::Send { platform: PLATFORM, message: e.to_string() })? {
            let line = line.trim();
            if let Some(command) = steering_command(line) {
                self.run_command(&command, &engine).await?;
                continue;
            }
            match line {
                "" => continue,
                "/quit" => break,
                _ => self.handle_line(line, &engine).await?,
            }
        }
        Ok(())
    }

    /// A chat command, its outcome printed as the console always has: `· ` for news,
    /// `! ` for what went wrong, nothing for a cancel that worked.
    async fn run_command(&self, command: &ChatCommand, engine: &EngineHandle) -> Result<(), PlatformError> {
        let locale = Locale::default();
        let printed = match engine.run_command(Self::chat(), self.actor.clone(), command).await {
            CommandOutcome::SessionStarted { session_id } => format!("· new session {session_id}"),
            CommandOutcome::Cancelled => return Ok(()),
            CommandOutcome::NoSession => format!("! {}", EngineError::NoSession),
            CommandOutcome::Failed(e) => format!("! {e}"),
            CommandOutcome::RevokeRefused(refusal) => refusal.notice(locale).map_or_else(|| "! cannot revoke the rule".to_owned(), |n| format!("! {n}")),
            outcome => commands::reply(locale, &outcome, "! the command failed").unwrap_or_default(),
        };
        self.print(&printed).await
    }

    async fn handle_line(&self, line: &str, engine: &EngineHandle) -> Result<(), PlatformError> {
        let front = self.queue().front().cloned();
        let Some((interaction, step)) = front else {
            if let Err(e) = engine.user_message(Self::chat(), self.actor.clone(), line.to_owned()).await {
                self.print(&format!("! {e}")).await?;
            }
            return Ok(());
        };
        let parsed = match (step, &interaction.request.kind) {
            (Step::Action(i), _) => input::parse_action(i, line, &interaction.remember_offered()),
            // The JSON alone, or any decision typed in full (the person changed their mind).
            (Step::EditJson(i), _) => match input::parse_action(i, line, &interaction.remember_offered()) {
                Parsed::Act(action) => Parsed::Act(action),
                _ => Parsed::Act(UserAction::EditArgs { action: i, json: line.to_owned() }),
            },
            (Step::Question(i), RequestKind::Questions { questions, .. }) => match questions.get(i) {
                Some(q) => input::parse_answer(i, q, line),
                None => Parsed::Invalid("no such question".into()),
            },
            (Step::Text(i), _) => Parsed::Act(UserAction::OtherText { question: i, text: line.to_owned() }),
            (Step::Question(_), _) => Parsed::Invalid("no such question".into()),
        };
        let action = match parsed {
            Parsed::Act(action) => action,
            Parsed::Ask(next) => return self.set_step(&interaction.id, next).await,
            Parsed::SelectThenText(options) => {
                let Step::Question(q) = step else { return Ok(()) };
                if !options.is_empty() {
                    let select = UserAction::Select { question: q, options };
                    if let Err(e) = engine.act(&interaction.id, self.actor.clone(), select).await {
                        self.print(&format!("! {e}")).await?;
                        return self.reprompt().await;
                    }
                }
                return self.set_step(&interaction.id, Step::Text(q)).await;
            }
            Parsed::Invalid(why) => return self.print(&format!("! {why}")).await,
        };
        let next = next_step(&interaction, step);
        self.act(engine, &interaction.id, action, next).await
    }

    /// Sends one action; on success moves to `next` (or submits when there is none).
    async fn act(&self, engine: &EngineHandle, id: &str, action: UserAction, next: Option<Step>) -> Result<(), PlatformError> {
        let updated = match engine.act(id, self.actor.clone(), action).await {
            Ok(ActOutcome::Resolved(_)) => return Ok(()), // refresh_interaction prints the outcome
            Ok(ActOutcome::Updated(updated)) => updated,
            Err(e) => {
                self.print(&format!("! {e}")).await?;
                return self.reprompt().await;
            }
        };
        // A comment that became user_edit_content leaves the action undecided: ask again.
        let undecided = match (&updated.draft, self.current_action(id)) {
            (Draft::Decisions(d), Some(i)) => d.decisions.get(i).is_some_and(Option::is_none).then_some(i),
            _ => None,
        };
        if let Some(i) = undecided {
            self.update_front(&updated, Step::Action(i));
            return self.reprompt().await;
        }
        match next {
            Some(step) => {
                self.update_front(&updated, step);
                self.reprompt().await
            }
            None => Box::pin(self.act(engine, id, UserAction::Submit, None)).await,
        }
    }

    fn current_action(&self, id: &str) -> Option<usize> {
        match self.queue().front() {
            Some((i, Step::Action(n) | Step::EditJson(n))) if i.id == id => Some(*n),
            _ => None,
        }
    }

    /// Keeps the queued copy's votes current, so a later prompt is built from them.
    fn update_votes(&self, interaction: &Interaction) {
        if let Some(entry) = self.queue().iter_mut().find(|(i, _)| i.id == interaction.id) {
            entry.0.draft = interaction.draft.clone();
        }
    }

    fn update_front(&self, interaction: &Interaction, step: Step) {
        if let Some(front) = self.queue().front_mut().filter(|(i, _)| i.id == interaction.id) {
            *front = (interaction.clone(), step);
        }
    }

    async fn set_step(&self, id: &str, step: Step) -> Result<(), PlatformError> {
        if let Some(front) = self.queue().front_mut().filter(|(i, _)| i.id == id) {
            front.1 = step;
        }
        self.reprompt().await
    }

    async fn reprompt(&self) -> Result<(), PlatformError> {
        match self.current_prompt() {
            Some(p) => self.print(&p).await,
            None => Ok(()),
        }
    }
}

/// The step after `step`, or `None` when it is time to submit.
fn next_step(interaction: &Interaction, step: Step) -> Option<Step> {
    match step {
        Step::Action(i) | Step::EditJson(i) => (i + 1 < interaction.request.actions().len()).then_some(Step::Action(i + 1)),
        Step::Question(i) | Step::Text(i) => match &interaction.request.kind {
            RequestKind::Questions { questions, .. } if i + 1 < questions.len() => Some(Step::Question(i + 1)),
            _ => None,
        },
    }
}

fn first_step(interaction: &Interaction) -> Step {
    if interaction.request.is_question() { Step::Question(0) } else { Step::Action(0) }
}

fn prompt(interaction: &Interaction, step: Step) -> String {
    match step {
        Step::Action(i) => render::action_prompt(interaction, i),
        Step::EditJson(i) => {
            let name = interaction.request.actions().get(i).map_or("the action", |a| a.name.as_str());
            format!("new args for {name} as a JSON object >")
        }
        Step::Question(i) => render::question_prompt(interaction, i),
        Step::Text(i) => match &interaction.request.kind {
            RequestKind::Questions { questions, .. } => questions.get(i).map(render::text_prompt).unwrap_or_default(),
            _ => String::new(),
        },
    }
}

impl Platform for Console {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    /// What was printed is gone with the process.
    fn keeps_messages(&self) -> bool {
        false
    }

    fn send_text<'a>(&'a self, _chat: &'a ChatKey, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move { self.print(&format!("agent: {}", readable::text(text))).await })
    }

    fn tool_status<'a>(&'a self, _chat: &'a ChatKey, status: &'a ToolGroupStatus) -> BoxFuture<'a, Result<(), PlatformError>> {
        // A terminal cannot edit a line it printed: one line per group, when it ends.
        Box::pin(async move { if status.finished { self.print(&status.line()).await } else { Ok(()) } })
    }

    fn show_interaction<'a>(&'a self, _chat: &'a ChatKey, interaction: &'a Interaction) -> BoxFuture<'a, Result<Option<String>, PlatformError>> {
        Box::pin(async move {
            self.print(&render::interaction(interaction)).await?;
            let is_front = {
                let mut queue = self.queue();
                queue.push_back((interaction.clone(), first_step(interaction)));
                queue.len() == 1
            };
            if is_front {
                self.reprompt().await?;
            }
            Ok(Some(interaction.id.clone()))
        })
    }

    fn refresh_interaction<'a>(&'a self, message: &'a MessageRef, interaction: &'a Interaction) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let known = self.queue().iter().any(|(i, _)| i.id == interaction.id);
            if interaction.status.is_pending() {
                // After a restart the queue is empty: show what is still waiting.
                if !known {
                    return self.show_interaction(&message.chat, interaction).await.map(|_| ());
                }
                // A vote came in (here or on another platform): say where the count is.
                if let Some(progress) = interaction.quorum_progress() {
                    self.update_votes(interaction);
                    return self.print(&format!("· {}", render::quorum_line(&progress))).await;
                }
                return Ok(());
            }
            let was_front = {
                let mut queue = self.queue();
                let was_front = queue.front().is_some_and(|(i, _)| i.id == interaction.id);
                queue.retain(|(i, _)| i.id != interaction.id);
                was_front
            };
            self.print(&render::outcome(interaction)).await?;
            if was_front {
                self.reprompt().await?;
            }
            Ok(())
        })
    }

    fn send_notice<'a>(&'a self, chat: &'a ChatKey, notice: &'a Notice) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let text = crate::texts::notice(notice);
            match notice {
                Notice::YouArePaired { .. } => self.send_text(chat, &text).await,
                _ => self.print(&format!("! {text}")).await,
            }
        })
    }

    /// A terminal mentions nobody: the reminder names whom it is for.
    fn send_reminder<'a>(&'a self, reminder: Reminder<'a>) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let Reminder { interaction, mention, .. } = reminder;
            let people = reminder::recipients(PLATFORM, interaction, mention, None);
            self.print(&reminder::plain(Locale::En, interaction, &people)).await
        })
    }
}

/// The commands the console takes (`/new`, `/cancel`, `/rules`, `/rules revoke ID`);
/// any other line answers the current request or goes to the agent.
fn steering_command(line: &str) -> Option<ChatCommand> {
    let (name, args) = line.strip_prefix('/')?.split_once(char::is_whitespace).unwrap_or((&line[1..], ""));
    ChatCommand::parse(name, args)
        .filter(|c| matches!(c, ChatCommand::New | ChatCommand::Cancel | ChatCommand::Rules | ChatCommand::Revoke { .. } | ChatCommand::RulesUsage))
}
