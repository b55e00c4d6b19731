//! Bridge → backend commands (PROTOCOL.md §2) and the decision and answer values
//! they carry.

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

/// One JSON object sent in one text frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    Message {
        session_id: String,
        content: Vec<TextContent>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        user: Option<UserInfo>,
    },
    Approval {
        session_id: String,
        approval_key: String,
        #[serde(flatten)]
        reply: Reply,
    },
    Cancel {
        session_id: String,
    },
}

impl Command {
    pub fn session_id(&self) -> &str {
        match self {
            Command::Message { session_id, .. } | Command::Approval { session_id, .. } | Command::Cancel { session_id } => session_id,
        }
    }

    /// A user's chat message as a `message` command.
    pub fn message(session_id: &str, text: &str, user: Option<UserInfo>) -> Self {
        Command::Message { session_id: session_id.to_owned(), content: vec![TextContent::text(text)], user }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: String,
}

impl TextContent {
    pub fn text(text: &str) -> Self {
        Self { kind: "text".into(), text: text.into() }
    }
}

/// Who wrote a message; informative only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserInfo {
    pub platform: String,
    pub id: String,
    pub name: String,
}

/// The body of an `approval` command: decisions for tool calls, answers for questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Reply {
    Decisions {
        decisions: Vec<Decision>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        user_edit_content: Option<String>,
    },
    Answers {
        answers: Answers,
    },
}

/// The decision types a review config may allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionType {
    Approve,
    Edit,
    Reject,
    Respond,
    /// Approve, and let the backend approve the same kind of action by itself for the
    /// rest of the session (Kimi CLI's `approve_for_session`). Offered only where a
    /// review config allows it.
    ApproveForSession,
}

impl DecisionType {
    pub const DEFAULT_ALLOWED: [DecisionType; 3] = [DecisionType::Approve, DecisionType::Edit, DecisionType::Reject];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "approve" => Some(Self::Approve),
            "edit" => Some(Self::Edit),
            "reject" => Some(Self::Reject),
            "respond" => Some(Self::Respond),
            "approve_for_session" => Some(Self::ApproveForSession),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Edit => "edit",
            Self::Reject => "reject",
            Self::Respond => "respond",
            Self::ApproveForSession => "approve_for_session",
        }
    }
}

/// One decision, for one action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Reject {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    Edit {
        edited_action: EditedAction,
    },
    Respond {
        message: String,
    },
    ApproveForSession,
}

impl Decision {
    pub fn decision_type(&self) -> DecisionType {
        match self {
            Decision::Approve => DecisionType::Approve,
            Decision::Reject { .. } => DecisionType::Reject,
            Decision::Edit { .. } => DecisionType::Edit,
            Decision::Respond { .. } => DecisionType::Respond,
            Decision::ApproveForSession => DecisionType::ApproveForSession,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditedAction {
    pub name: String,
    pub args: Map<String, Value>,
}

/// Answers keyed by the exact question text, in question order.
///
/// A map on the wire, but kept as an ordered list so the JSON the backend receives
/// lists questions in the order they were asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answers(pub Vec<(String, String)>);

impl Answers {
    pub fn get(&self, question: &str) -> Option<&str> {
        self.0.iter().find(|(q, _)| q == question).map(|(_, a)| a.as_str())
    }
}

impl Serialize for Answers {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (question, answer) in &self.0 {
            map.serialize_entry(question, answer)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Answers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct AnswersVisitor;
        impl<'de> Visitor<'de> for AnswersVisitor {
            type Value = Answers;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map from question text to answer")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Answers, A::Error> {
                let mut answers = Vec::new();
                while let Some((question, answer)) = access.next_entry::<String, Value>()? {
                    // Backends are not strict about the value type; keep non-strings as JSON text.
                    let answer = match answer {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    answers.push((question, answer));
                }
                Ok(Answers(answers))
            }
        }
        deserializer.deserialize_map(AnswersVisitor)
    }
}
