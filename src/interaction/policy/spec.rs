//! A policy as written: a `[[policies]]` entry in the config, or the `policy` object of
//! a request pushed over the HTTP API, and its validation into a [`Policy`]. Errors name
//! the offending key (`policies[0].quorum`, `policy.escalation[2].after`), and a spec
//! that does not validate is refused whole.
//!
//! The JSON of a request's own policy (the same keys as the config, minus the match
//! filters `name`, `tools`, `backends`, `sessions`, `targets`):
//!
//! ```json
//! {"approvers": ["telegram:123456"], "approver_roles": ["1200000000000000000"],
//!  "quorum": 2, "remember": [], "remember_args": "same",
//!  "escalation": [{"after": "5m", "remind": "role:1200000000000000000"},
//!                 {"after": 900, "show_in": "discord:1300000000000000000"},
//!                 {"after": "30m", "fallback": "reject"}]}
//! ```
//!
//! Durations (`after`) are whole seconds as a number, or text: `90s`, `5m`, `1h`, `1d`,
//! or combined, `1h30m`.

use serde::{Deserialize, Serialize};

use super::escalation::{EscalationStep, Fallback, FallbackDecision, Mention, StepAction};
use super::remember::{RememberArgs, RememberScope};
use super::{Matcher, Policy, PolicyRule};
use crate::interaction::chat::Networks;

/// The most approvals a quorum may ask for.
pub const MAX_QUORUM: i64 = 50;
/// The most escalation steps (fallback included) one policy may list.
pub const MAX_STEPS: usize = 20;
/// The latest an escalation step may come: 30 days, the longest request timeout.
pub const MAX_AFTER_SECS: u64 = 30 * 24 * 3600;

/// A policy as written in the config: a `[[policies]]` entry, its match filters and
/// its [`PolicyTerms`]. See config/default.toml for every key. It reads as one flat
/// table (the filters beside the terms), and a key that is neither is refused by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PolicySpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub backends: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    #[serde(flatten)]
    pub terms: PolicyTerms,
}

/// The keys of a policy that say what it does, as a `[[policies]]` entry and a pushed
/// request's own `policy` both write them: who must approve, how many of them, what may
/// be remembered, and what happens when nobody answers. The HTTP API documents it as
/// `ApiPolicy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ApiPolicy, example = json!({"approver_roles": ["1200000000000000000"], "quorum": 2,
    "escalation": [{"after": "5m", "remind": "approvers"}, {"after": "15m", "show_in": "discord:1300000000000000000"}, {"after": "30m", "fallback": "reject"}]}))]
pub struct PolicyTerms {
    /// `"platform:user_id"` entries. With these or `approver_roles`, only they decide
    /// (they replace the request's `approvers` and the configured ones).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<String>,
    /// Groups whose members decide, each as its platform writes a group id (the
    /// platforms' address grammars say how: `ChatNetwork::group_form`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approver_roles: Vec<String>,
    /// Distinct people who must approve the same decisions (1–50, default 1). A
    /// reject by anyone ends the request at once. Signed, so that `-1` gets "must be
    /// at least 1" rather than a type error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<i64>,
    /// Which of `session` ("approve for this session") and `always` may be offered
    /// beside "Approve"; not with a quorum above 1.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remember: Vec<String>,
    /// What a remembered approval compares besides the tool: `same` args (default) or `any`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remember_args: Option<String>,
    /// Steps in time order; a `fallback`, if any, is the last one, and its moment
    /// becomes the request's deadline (`expires_at`), replacing `timeout_seconds`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalation: Vec<StepSpec>,
}

/// One escalation step: `after` and exactly one of `remind`, `show_in`, `fallback`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ApiEscalationStep)]
pub struct StepSpec {
    /// After this long since the request was created: whole seconds, or text such as
    /// `90s`, `5m`, `1h30m`, `1d`.
    pub after: DurationSpec,
    /// Post a reminder mentioning `approvers`, `role:ROLE_ID` or `platform:user_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind: Option<String>,
    /// Show the request in one more chat, written as in `routing.channels`:
    /// `telegram:CHAT[/TOPIC]`, `discord:CHANNEL[/THREAD]`, `discord:user:USER`, `console`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub show_in: Option<String>,
    /// End the request: `approve`, `reject` or `leave` (send nothing); only as the
    /// last step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

/// Whole seconds, or text such as `5m`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
#[schema(as = ApiDuration)]
pub enum DurationSpec {
    Secs(i64),
    Text(String),
}

/// The match filters of a `[[policies]]` entry, read apart from its terms.
#[derive(Deserialize)]
struct Filters {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    backends: Vec<String>,
    #[serde(default)]
    sessions: Vec<String>,
    #[serde(default)]
    targets: Vec<String>,
}

const FILTER_KEYS: [&str; 5] = ["name", "tools", "backends", "sessions", "targets"];

// By hand, because serde's `flatten` cannot refuse unknown keys: the filters are taken
// out of the table, and the terms, which refuse unknown keys, read the rest.
impl<'de> Deserialize<'de> for PolicySpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut terms = serde_json::Map::deserialize(deserializer)?;
        let filters: serde_json::Map<String, serde_json::Value> = FILTER_KEYS.iter().filter_map(|k| terms.remove_entry(*k)).collect();
        let filters: Filters = serde_json::from_value(filters.into()).map_err(D::Error::custom)?;
        let terms: PolicyTerms = serde_json::from_value(terms.into()).map_err(D::Error::custom)?;
        Ok(PolicySpec { name: filters.name, tools: filters.tools, backends: filters.backends, sessions: filters.sessions, targets: filters.targets, terms })
    }
}

/// A spec that does not validate: which key, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}`: {reason}")]
pub struct PolicyError {
    pub key: String,
    pub reason: String,
}

/// What a spec is checked against that the caller knows: whether a text names a chat
/// the bridge can show a request in (`show_in`), and the platforms people are on
/// (`approvers`, mentions).
pub struct Known<'a> {
    pub is_target: &'a dyn Fn(&str) -> bool,
    pub networks: &'a Networks,
}

/// The backend kind of pushed requests (the HTTP API's), for `backends` filters.
pub const PUSHED: &str = "http";

impl PolicySpec {
    /// A `[[policies]]` entry, number `index` in the file. `backends` are the backend
    /// kinds a chat session may have (the backend registry's names, handed down);
    /// `http`, the pushed requests', is always one.
    pub fn to_rule(&self, index: usize, known: &Known<'_>, backends: &[&str]) -> Result<PolicyRule, PolicyError> {
        let key = format!("policies[{index}]");
        let err = |field: &str, reason: String| PolicyError { key: format!("{key}.{field}"), reason };
        if self.tools.is_empty() {
            return Err(err("tools", "must list at least one tool name or glob (\"*\" for every tool)".into()));
        }
        for (field, list) in [("tools", &self.tools), ("sessions", &self.sessions), ("targets", &self.targets)] {
            if let Some(i) = list.iter().position(|p| p.trim().is_empty()) {
                return Err(err(&format!("{field}[{i}]"), "must not be empty".into()));
            }
        }
        if let Some((i, b)) = self.backends.iter().enumerate().find(|(_, b)| *b != PUSHED && !backends.contains(&b.as_str())) {
            return Err(err(&format!("backends[{i}]"), format!("`{b}` is not a backend kind ({}, or {PUSHED} for pushed requests)", backends.join(", "))));
        }
        let name = match &self.name {
            Some(n) if n.trim().is_empty() => return Err(err("name", "must not be empty".into())),
            Some(n) => n.trim().to_owned(),
            None => key.clone(),
        };
        let policy = self.terms.policy(&key, name, known)?;
        let matcher = Matcher { tools: self.tools.clone(), backends: self.backends.clone(), sessions: self.sessions.clone(), targets: self.targets.clone() };
        Ok(PolicyRule { matcher, policy })
    }

    /// A request's own policy (the HTTP API's `policy`): no match filters, since it
    /// applies to the request that carries it.
    pub fn to_request_policy(&self, known: &Known<'_>) -> Result<Policy, PolicyError> {
        let key = "policy";
        for (field, set) in [
            ("name", self.name.is_some()),
            ("tools", !self.tools.is_empty()),
            ("backends", !self.backends.is_empty()),
            ("sessions", !self.sessions.is_empty()),
            ("targets", !self.targets.is_empty()),
        ] {
            if set {
                return Err(PolicyError { key: format!("{key}.{field}"), reason: "is a config filter; a request's policy applies to that request".into() });
            }
        }
        self.terms.to_request_policy(known)
    }
}

impl PolicyTerms {
    /// A request's own policy (the HTTP API's `policy`).
    pub fn to_request_policy(&self, known: &Known<'_>) -> Result<Policy, PolicyError> {
        self.policy("policy", "request".into(), known)
    }

    fn policy(&self, key: &str, name: String, known: &Known<'_>) -> Result<Policy, PolicyError> {
        let err = |field: &str, reason: String| PolicyError { key: format!("{key}.{field}"), reason };
        let mut approvers = Vec::new();
        for (i, entry) in self.approvers.iter().enumerate() {
            match known.networks.parse_user(entry) {
                Some(p) => approvers.push(p),
                None => return Err(err(&format!("approvers[{i}]"), format!("`{entry}` is not of the form platform:user_id ({})", known.networks.listed()))),
            }
        }
        if let Some((i, role)) = self.approver_roles.iter().enumerate().find(|(_, r)| !known.networks.is_group_id(r)) {
            return Err(err(&format!("approver_roles[{i}]"), format!("`{role}` is not {}", known.networks.group_forms())));
        }
        let quorum = self.quorum.unwrap_or(1);
        if !(1..=MAX_QUORUM).contains(&quorum) {
            return Err(err("quorum", format!("must be between 1 and {MAX_QUORUM}, not {quorum}")));
        }
        if self.approver_roles.is_empty() && !approvers.is_empty() && quorum as usize > approvers.len() {
            return Err(err("quorum", format!("is {quorum} but only {} approvers are listed (and no approver_roles)", approvers.len())));
        }
        let mut remember = Vec::new();
        for (i, scope) in self.remember.iter().enumerate() {
            match RememberScope::parse(scope) {
                Some(s) if !remember.contains(&s) => remember.push(s),
                Some(_) => return Err(err(&format!("remember[{i}]"), format!("`{scope}` is listed twice"))),
                None => return Err(err(&format!("remember[{i}]"), format!("`{scope}` is neither \"session\" nor \"always\""))),
            }
        }
        if !remember.is_empty() && quorum > 1 {
            return Err(err("remember", "cannot be used with a quorum above 1: a rule set by one person would skip the quorum next time".into()));
        }
        let remember_args = match self.remember_args.as_deref() {
            None | Some("same") => RememberArgs::Same,
            Some("any") => RememberArgs::Any,
            Some(other) => return Err(err("remember_args", format!("`{other}` is neither \"same\" nor \"any\""))),
        };
        let (escalation, fallback) = self.steps(key, known)?;
        Ok(Policy { name, approvers, approver_roles: self.approver_roles.clone(), quorum: quorum as u32, remember, remember_args, escalation, fallback })
    }

    fn steps(&self, key: &str, known: &Known<'_>) -> Result<(Vec<EscalationStep>, Option<Fallback>), PolicyError> {
        if self.escalation.len() > MAX_STEPS {
            return Err(PolicyError { key: format!("{key}.escalation"), reason: format!("lists {} steps; at most {MAX_STEPS}", self.escalation.len()) });
        }
        let mut steps = Vec::new();
        let mut fallback = None;
        let mut previous: Option<u64> = None;
        for (i, spec) in self.escalation.iter().enumerate() {
            let at = |field: &str| format!("{key}.escalation[{i}]{field}");
            let err = |field: &str, reason: String| PolicyError { key: at(field), reason };
            let after = parse_duration(&spec.after).map_err(|reason| err(".after", reason))?;
            if let Some(p) = previous
                && after <= p
            {
                return Err(err(".after", format!("must come after the step before it ({p} s), not at {after} s")));
            }
            previous = Some(after);
            if fallback.is_some() {
                return Err(err("", "comes after the fallback; the fallback must be the last step".into()));
            }
            match (&spec.remind, &spec.show_in, &spec.fallback) {
                (Some(who), None, None) => {
                    let mention = parse_mention(who, known.networks)
                        .ok_or_else(|| err(".remind", format!("`{who}` is not \"approvers\", role:ROLE_ID or platform:user_id")))?;
                    steps.push(EscalationStep { after_secs: after, action: StepAction::Remind { mention } });
                }
                (None, Some(target), None) => {
                    if !(known.is_target)(target) {
                        return Err(err(".show_in", format!("`{target}` is not platform:chat {}", known.networks.chat_examples(false))));
                    }
                    steps.push(EscalationStep { after_secs: after, action: StepAction::ShowIn { target: target.clone() } });
                }
                (None, None, Some(decision)) => {
                    let decision = match decision.as_str() {
                        "approve" => FallbackDecision::Approve,
                        "reject" => FallbackDecision::Reject,
                        "leave" => FallbackDecision::Leave,
                        other => return Err(err(".fallback", format!("`{other}` is not approve, reject or leave"))),
                    };
                    fallback = Some(Fallback { after_secs: after, decision });
                }
                _ => return Err(err("", "needs exactly one of remind, show_in, fallback".into())),
            }
        }
        Ok((steps, fallback))
    }
}

fn parse_mention(text: &str, networks: &Networks) -> Option<Mention> {
    if text == "approvers" {
        return Some(Mention::Approvers);
    }
    if let Some(role) = text.strip_prefix("role:") {
        return networks.is_group_id(role).then(|| Mention::Role { role_id: role.to_owned() });
    }
    networks.parse_user(text).map(|(platform, user_id)| Mention::User { platform, user_id })
}

/// Seconds from a number or from text such as `90s`, `5m`, `1h30m`, `1d`.
pub fn parse_duration(spec: &DurationSpec) -> Result<u64, String> {
    let secs = match spec {
        DurationSpec::Secs(n) if *n < 1 => return Err(format!("must be at least 1 second, not {n}")),
        DurationSpec::Secs(n) => *n as u64,
        DurationSpec::Text(text) => {
            parse_duration_text(text.trim()).ok_or_else(|| format!("`{text}` is not a duration like 90s, 5m, 1h30m or a number of seconds"))?
        }
    };
    if secs == 0 {
        return Err("must be at least 1 second".into());
    }
    if secs > MAX_AFTER_SECS {
        return Err(format!("{secs} s is longer than 30 days"));
    }
    Ok(secs)
}

fn parse_duration_text(text: &str) -> Option<u64> {
    if text.is_empty() {
        return None;
    }
    if let Ok(n) = text.parse::<u64>() {
        return Some(n);
    }
    let mut total: u64 = 0;
    let mut digits = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return None,
        };
        let n: u64 = digits.parse().ok()?;
        total = total.checked_add(n.checked_mul(unit)?)?;
        digits.clear();
    }
    digits.is_empty().then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn any_target(t: &str) -> bool {
        t.starts_with("discord:") || t.starts_with("telegram:")
    }

    static NETWORKS: std::sync::LazyLock<Networks> = std::sync::LazyLock::new(crate::interaction::test_networks::networks);
    fn known() -> Known<'static> {
        Known { is_target: &any_target, networks: &NETWORKS }
    }

    const KNOWN_BACKENDS: &[&str] = &["stream", "kimi"];

    fn spec(value: serde_json::Value) -> PolicySpec {
        serde_json::from_value(value).expect("a spec")
    }

    fn rule_error(value: serde_json::Value) -> String {
        spec(value).to_rule(3, &known(), KNOWN_BACKENDS).expect_err("refused").to_string()
    }

    #[test]
    fn durations() {
        let d = |s: &str| parse_duration(&DurationSpec::Text(s.into()));
        assert_eq!(d("90s"), Ok(90));
        assert_eq!(d("5m"), Ok(300));
        assert_eq!(d("1h30m"), Ok(5400));
        assert_eq!(d("1d"), Ok(86_400));
        assert_eq!(d(" 45 "), Ok(45));
        assert_eq!(parse_duration(&DurationSpec::Secs(300)), Ok(300));
        assert_eq!(d("5"), Ok(5), "digits alone are seconds");
        for bad in ["", "m", "5x", "5m3", "-5m", "1.5h"] {
            assert!(d(bad).is_err(), "{bad}");
        }
        assert_eq!(d("0m"), Err("must be at least 1 second".into()));
        assert_eq!(parse_duration(&DurationSpec::Secs(0)), Err("must be at least 1 second, not 0".into()));
        assert_eq!(d("31d"), Err("2678400 s is longer than 30 days".into()));
        assert!(d("99999999999999999999d").is_err(), "overflow is refused, not wrapped");
    }

    #[test]
    fn a_full_entry_validates() {
        let rule = spec(json!({
            "name": "migrations", "tools": ["run_migration"], "backends": ["stream"],
            "approver_roles": ["900"], "quorum": 2,
            "escalation": [
                {"after": "5m", "remind": "role:900"},
                {"after": 900, "show_in": "discord:1300"},
                {"after": "30m", "fallback": "reject"}
            ]
        }))
        .to_rule(0, &known(), KNOWN_BACKENDS)
        .unwrap();
        assert_eq!(rule.policy.name, "migrations");
        assert_eq!(rule.policy.quorum, 2);
        assert_eq!(rule.policy.escalation.len(), 2);
        assert_eq!(rule.policy.fallback, Some(Fallback { after_secs: 1800, decision: FallbackDecision::Reject }));
        assert_eq!(rule.matcher.backends, ["stream"]);
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            (json!({}), "`policies[3].tools`: must list at least one"),
            (json!({"tools": [""]}), "`policies[3].tools[0]`: must not be empty"),
            (json!({"tools": ["t"], "backends": ["ftp"]}), "`policies[3].backends[0]`: `ftp` is not a backend kind"),
            (json!({"tools": ["t"], "quorum": 0}), "`policies[3].quorum`: must be between 1 and 50, not 0"),
            (json!({"tools": ["t"], "quorum": -1}), "`policies[3].quorum`: must be between 1 and 50, not -1"),
            (json!({"tools": ["t"], "quorum": 3, "approvers": ["telegram:1", "telegram:2"]}), "`policies[3].quorum`: is 3 but only 2 approvers are listed"),
            (json!({"tools": ["t"], "approvers": ["nobody"]}), "`policies[3].approvers[0]`: `nobody` is not of the form platform:user_id"),
            (json!({"tools": ["t"], "approver_roles": ["dba"]}), "`policies[3].approver_roles[0]`: `dba` is not a Discord role id"),
            (json!({"tools": ["t"], "remember": ["forever"]}), "`policies[3].remember[0]`: `forever` is neither"),
            (json!({"tools": ["t"], "remember": ["session", "session"]}), "`policies[3].remember[1]`: `session` is listed twice"),
            (json!({"tools": ["t"], "remember": ["session"], "quorum": 2}), "`policies[3].remember`: cannot be used with a quorum above 1"),
            (json!({"tools": ["t"], "remember_args": "some"}), "`policies[3].remember_args`: `some` is neither"),
            (json!({"tools": ["t"], "escalation": [{"after": "5m"}]}), "`policies[3].escalation[0]`: needs exactly one of remind, show_in, fallback"),
            (
                json!({"tools": ["t"], "escalation": [{"after": "5m", "remind": "approvers", "fallback": "reject"}]}),
                "`policies[3].escalation[0]`: needs exactly one",
            ),
            (json!({"tools": ["t"], "escalation": [{"after": "soon", "remind": "approvers"}]}), "`policies[3].escalation[0].after`: `soon` is not a duration"),
            (json!({"tools": ["t"], "escalation": [{"after": "5m", "remind": "role:x"}]}), "`policies[3].escalation[0].remind`: `role:x` is not"),
            (
                json!({"tools": ["t"], "escalation": [{"after": "5m", "show_in": "irc:#ops"}]}),
                "`policies[3].escalation[0].show_in`: `irc:#ops` is not platform:chat",
            ),
            (
                json!({"tools": ["t"], "escalation": [{"after": "5m", "fallback": "maybe"}]}),
                "`policies[3].escalation[0].fallback`: `maybe` is not approve, reject or leave",
            ),
            (
                json!({"tools": ["t"], "escalation": [{"after": "10m", "remind": "approvers"}, {"after": "5m", "remind": "approvers"}]}),
                "`policies[3].escalation[1].after`: must come after the step before it (600 s), not at 300 s",
            ),
            (
                json!({"tools": ["t"], "escalation": [{"after": "10m", "fallback": "reject"}, {"after": "20m", "remind": "approvers"}]}),
                "`policies[3].escalation[1]`: comes after the fallback",
            ),
            (json!({"tools": ["t"], "name": " "}), "`policies[3].name`: must not be empty"),
        ];
        for (value, expected) in cases {
            let got = rule_error(value.clone());
            assert!(got.starts_with(expected), "{value}: {got}");
        }
    }

    #[test]
    fn unknown_keys_are_refused() {
        let err = serde_json::from_value::<PolicySpec>(json!({"tools": ["t"], "quorom": 2})).unwrap_err();
        assert!(err.to_string().contains("quorom"), "{err}");
        let err = serde_json::from_value::<PolicySpec>(json!({"tools": ["t"], "escalation": [{"after": 1, "remnd": "approvers"}]})).unwrap_err();
        assert!(err.to_string().contains("remnd"), "{err}");
    }

    #[test]
    fn a_requests_policy_has_no_filters() {
        let ok = spec(json!({"quorum": 2, "approvers": ["telegram:1", "discord:2"], "escalation": [{"after": 60, "fallback": "approve"}]}))
            .to_request_policy(&known())
            .unwrap();
        assert_eq!(ok.name, "request");
        assert_eq!(ok.approvers, [("telegram".to_string(), "1".to_string()), ("discord".to_string(), "2".to_string())]);
        assert_eq!(ok.fallback, Some(Fallback { after_secs: 60, decision: FallbackDecision::Approve }));
        let err = spec(json!({"tools": ["t"]})).to_request_policy(&known()).unwrap_err();
        assert_eq!(err.key, "policy.tools");
        let err = spec(json!({"quorum": 0})).to_request_policy(&known()).unwrap_err();
        assert_eq!(err.to_string(), "`policy.quorum`: must be between 1 and 50, not 0");
    }
}
