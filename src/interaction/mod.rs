//! The pure core: what an interaction is and how it may change.
//!
//! Nothing here does IO or reads a clock; time comes in as unix milliseconds. Platforms
//! turn clicks and replies into [`UserAction`]s, the core decides what they mean, and
//! the engine persists and delivers the result. What a backend said arrives as
//! [`updates::SessionUpdate`]s, whichever backend it was. Everything subtle (merging request
//! shapes, answer encoding, who may answer, first decision wins) lives here.

pub mod access;
pub mod access_facts;
pub mod admission;
pub mod answers;
mod apply;
pub mod chat;
pub mod command;
pub mod decisions;
pub mod policy;
pub mod question;
pub mod readable;
pub mod refusal;
pub mod request;
pub mod state;
#[cfg(test)]
pub mod test_networks;
pub mod updates;
pub mod user_action;

pub use access::{AccessPolicy, Actor, Approvers, Origin};
pub use access_facts::AccessFacts;
pub use admission::{Allowlist, Verdict};
pub use answers::{AnswerDraft, NO_PREFERENCE, decode_labels, selected_labels};
pub use decisions::DecisionDraft;
pub use policy::{Policy, PolicyRule, PolicySpec, RememberScope, RememberedRule};
pub use question::{FreeText, Question, QuestionError, QuestionOption};
pub use refusal::{Attempt, Opening, Refusal};
pub use request::{Action, Request, RequestBuilder, RequestError, RequestKind, TimeoutDefaults};
pub use state::{Applied, Decider, Delivery, Draft, Interaction, Revision, Status, UserAction};
