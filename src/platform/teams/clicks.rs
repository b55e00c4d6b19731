//! A card's `Action.Execute`, as Teams delivers it: the `adaptiveCard/action` invoke
//! (learn.microsoft.com, "Universal Actions for Adaptive Cards", "Invoke request
//! and response"). Its `value.action.data` holds the signed `hitl` token and every
//! input of the card (`args.0`, `reason.0`, `comment.0`, `answer.1`, `other.1`).
//! The token is verified, then one call to the engine, which checks who may act (the
//! same access rules as every platform), applies, audits and updates every copy of
//! the card through the Connector API. This file never decides anything itself.
//!
//! The invoke is answered, within Teams' time limit, with what the clicker sees at
//! once ([`Answer`]): the updated card, the card with the engine's verdict on invalid
//! JSON under the Edit input (nothing sent), or a notice only they see (a stranger, a
//! late or repeated click, a forged value), which changes nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::codes::Code;
use super::payload::Activity;
use super::render::{self, CARD_TYPE};
use super::text::{TMsg, ttext};
use super::{PLATFORM, Shared};
use crate::engine::{ActError, ActOutcome};
use crate::interaction::{Actor, Refusal, UserAction};
use crate::protocol::Decision;
use crate::texts::{self, Msg};

/// What the clicker sees in answer to their invoke.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The message activity carrying the card as it now stands (for them; every copy
    /// is updated besides).
    Card(Arc<Value>),
    /// A notice only they see.
    Notice(String),
}

/// The invoke response's body: `statusCode` 200 with a card or a message, borrowed
/// from the [`Answer`] (the card is not copied to be sent).
#[derive(Serialize)]
pub struct Body<'a> {
    #[serde(rename = "statusCode")]
    status_code: u16,
    #[serde(rename = "type")]
    kind: &'static str,
    value: Shown<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Shown<'a> {
    Card(&'a Value),
    Text(&'a str),
}

impl Answer {
    pub fn body(&self) -> Body<'_> {
        let (kind, value) = match self {
            Answer::Card(message) => (CARD_TYPE, Shown::Card(render::card_of(message))),
            Answer::Notice(text) => ("application/vnd.microsoft.activity.message", Shown::Text(text)),
        };
        Body { status_code: 200, kind, value }
    }
}

/// The person acting: their Entra object id and name.
pub fn actor(activity: &Activity) -> Option<Actor> {
    let id = activity.person()?;
    let name = activity.from.name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| id.clone());
    Some(Actor::new(PLATFORM, &id, &name))
}

/// What to tell the clicker when the engine refused or failed.
fn notice(shared: &Shared, e: &ActError) -> String {
    match e {
        ActError::Refused(refusal) => texts::refusal(shared.locale, refusal),
        ActError::UnknownInteraction => texts::text(shared.locale, Msg::UnknownButton).to_owned(),
        ActError::StoreFailing(why) => {
            tracing::error!(error = %why, "a Teams click was not saved: the store is failing");
            texts::text(shared.locale, Msg::StoreFailing).to_owned()
        }
        ActError::Internal(why) => {
            tracing::error!(error = %why, "acting on a Teams click failed");
            ttext(shared.locale, TMsg::Internal).to_owned()
        }
    }
}

/// A string input of the card, as typed.
fn input<'a>(data: &'a Value, id: &str) -> &'a str {
    data[id].as_str().unwrap_or_default()
}

/// Handles one `adaptiveCard/action` invoke.
pub async fn click(shared: &Shared, activity: &Activity) -> Answer {
    let unknown = || Answer::Notice(texts::text(shared.locale, Msg::UnknownButton).to_owned());
    let data = &activity.value["action"]["data"];
    let Some(token) = data["hitl"].as_str() else { return unknown() };
    let Ok(verified) = shared.signer.verify(token).map_err(|e| tracing::info!(error = %e, "refusing a Teams card value that does not verify")) else {
        return unknown();
    };
    let Some(code) = Code::parse(&verified.code) else { return unknown() };
    let Some(mut actor) = actor(activity) else {
        tracing::info!("a Teams click without the person's Entra object id; refused");
        return unknown();
    };
    let id = verified.interaction_id;
    shared.groups.of_clicker(shared, &id, &mut actor).await;
    let result = match code {
        Code::Answer => answer_set(shared, &id, actor, data).await,
        code => {
            let Some(action) = action_of(code, data) else { return unknown() };
            shared.engine.act(&id, actor, action).await
        }
    };
    match result {
        Ok(ActOutcome::Updated(interaction) | ActOutcome::Resolved(interaction)) => Answer::Card(shared.changed_card(&interaction)),
        Err(ActError::Refused(refusal @ Refusal::InvalidEdit(_))) => {
            let Code::Edit(index) = code else { return Answer::Notice(texts::refusal(shared.locale, &refusal)) };
            let verdict = texts::refusal(shared.locale, &refusal);
            match shared.engine.interaction(&id).await {
                Ok(Some(interaction)) => Answer::Card(Arc::new(render::message(shared.card(&interaction, Some((index, &verdict)))))),
                _ => Answer::Notice(verdict),
            }
        }
        Err(e) => Answer::Notice(notice(shared, &e)),
    }
}

/// The engine action a button and the card's inputs stand for.
pub fn action_of(code: Code, data: &Value) -> Option<UserAction> {
    if let Some(action) = code.direct_action() {
        return Some(action);
    }
    Some(match code {
        Code::Edit(action) => UserAction::EditArgs { action, json: input(data, &format!("args.{action}")).to_owned() },
        Code::Reject(action) => {
            let reason = input(data, &format!("reason.{action}")).trim();
            UserAction::Decide { action, decision: Decision::Reject { message: (!reason.is_empty()).then(|| reason.to_owned()) } }
        }
        Code::Comment(action) => UserAction::Comment { action, text: input(data, &format!("comment.{action}")).to_owned() },
        _ => return None,
    })
}

/// Each question's choice and typed text, from the card's inputs: `answer.{q}` (the
/// chosen option indexes, comma-separated, as `Input.ChoiceSet` sends them) and
/// `other.{q}`. Inputs that do not read are refused whole.
pub fn answers_of(data: &Value) -> Option<BTreeMap<usize, (Vec<usize>, String)>> {
    let mut out: BTreeMap<usize, (Vec<usize>, String)> = BTreeMap::new();
    for (key, value) in data.as_object()? {
        let (field, index) = match key.split_once('.') {
            Some((field @ ("answer" | "other"), index)) => (field, index.parse::<usize>().ok()?),
            _ => continue,
        };
        let value = value.as_str()?;
        let entry = out.entry(index).or_default();
        if field == "answer" {
            entry.0 = value.split(',').map(str::trim).filter(|v| !v.is_empty()).map(|v| v.parse::<usize>().ok()).collect::<Option<Vec<_>>>()?;
        } else {
            entry.1 = value.trim().to_owned();
        }
    }
    Some(out)
}

/// One Submit for a question set: each question's selection and text, then Submit,
/// each through the engine (which checks and audits every step); the first refusal
/// stops it.
async fn answer_set(shared: &Shared, id: &str, actor: Actor, data: &Value) -> Result<ActOutcome, ActError> {
    let answers = answers_of(data).ok_or(ActError::Refused(Refusal::OutOfRange("question")))?;
    for (question, (options, text)) in answers {
        if !options.is_empty() {
            shared.engine.act(id, actor.clone(), UserAction::Select { question, options }).await?;
        }
        if !text.is_empty() {
            shared.engine.act(id, actor.clone(), UserAction::OtherText { question, text }).await?;
        }
    }
    shared.engine.act(id, actor, UserAction::Submit).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::kit::codes::Decide;
    use serde_json::json;

    #[test]
    fn the_invoke_answer_carries_the_card_or_the_notice() {
        let card = json!({ "type": "AdaptiveCard", "version": "1.5", "body": [] });
        let answer = Answer::Card(Arc::new(render::message(card.clone())));
        assert_eq!(serde_json::to_value(answer.body()).unwrap(), json!({ "statusCode": 200, "type": CARD_TYPE, "value": card }));
        let notice = Answer::Notice("This request has expired.".into());
        assert_eq!(
            serde_json::to_string(&notice.body()).unwrap(),
            r#"{"statusCode":200,"type":"application/vnd.microsoft.activity.message","value":"This request has expired."}"#
        );
    }

    #[test]
    fn typed_inputs_become_the_action() {
        let data = json!({ "hitl": "t", "args.0": "{\"x\": 1}", "reason.1": "  too risky ", "comment.0": "why?", "reason.2": " " });
        assert_eq!(action_of(Code::Edit(0), &data), Some(UserAction::EditArgs { action: 0, json: "{\"x\": 1}".into() }));
        assert_eq!(action_of(Code::Reject(1), &data), Some(UserAction::Decide { action: 1, decision: Decision::Reject { message: Some("too risky".into()) } }));
        assert_eq!(action_of(Code::Reject(2), &data), Some(UserAction::Decide { action: 2, decision: Decision::Reject { message: None } }));
        assert_eq!(action_of(Code::Comment(0), &data), Some(UserAction::Comment { action: 0, text: "why?".into() }));
        assert_eq!(action_of(Code::Decide(Decide::Approve(0)), &data), Some(UserAction::Decide { action: 0, decision: Decision::Approve }));
    }

    #[test]
    fn choice_sets_read_as_indexes_and_junk_is_refused() {
        let read = answers_of(&json!({ "hitl": "t", "answer.0": "1", "answer.1": "0,2", "other.1": " Postgres ", "other.2": "" })).unwrap();
        assert_eq!(read[&0], (vec![1], String::new()));
        assert_eq!(read[&1], (vec![0, 2], "Postgres".to_owned()));
        assert_eq!(read[&2], (vec![], String::new()));
        assert_eq!(answers_of(&json!({ "answer.0": "first" })), None);
        assert_eq!(answers_of(&json!({ "answer.x": "1" })), None);
    }
}
