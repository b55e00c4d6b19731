"""Building ``POST /v1/requests`` bodies. Pure functions: what they return is exactly
the JSON sent, so it can be logged, compared or posted with :meth:`HitlClient.create`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .types import Action, Policy, Question, ReviewConfig, Target, TargetLike

__all__ = [
    "CommonFields",
    "action_requests_body",
    "approval_body",
    "choices_body",
    "questions_body",
    "target_dict",
]

_ID_KEYS = frozenset({"chat_id", "thread_id", "channel_id", "user_id"})


def target_dict(target: TargetLike) -> dict[str, Any]:
    """The wire form of a target (a :class:`Target` or a dict, copied)."""
    if isinstance(target, Target):
        return target.to_dict()
    if isinstance(target, Mapping):
        if "platform" not in target:
            raise ValueError(f"a target needs a platform: {dict(target)!r}")
        # Ids travel as strings (a Telegram group id is a negative number).
        return {
            k: str(v) if k in _ID_KEYS and isinstance(v, int) and not isinstance(v, bool) else v
            for k, v in target.items()
        }
    raise TypeError(f"a target is a Target or a dict, not {type(target).__name__}")


@dataclass(frozen=True)
class CommonFields:
    """The fields every request shape shares."""

    targets: Sequence[TargetLike]
    approvers: Sequence[str] | None = None
    approver_roles: Sequence[str] | None = None
    text: str | None = None
    timeout_seconds: int | None = None
    approval_key: str | None = None
    session_id: str | None = None
    callback_url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        if isinstance(self.targets, (str, bytes, Mapping, Target)):
            raise TypeError("targets is a list of targets, e.g. [Target.console()]")
        targets = [target_dict(t) for t in self.targets]
        if not targets:
            raise ValueError("a request needs at least one target")
        body: dict[str, Any] = {}
        if self.approval_key is not None:
            body["approval_key"] = self.approval_key
        if self.session_id is not None:
            body["session_id"] = self.session_id
        body["targets"] = targets
        if self.approvers is not None:
            body["approvers"] = _strings("approvers", self.approvers)
        if self.approver_roles is not None:
            body["approver_roles"] = _strings("approver_roles", self.approver_roles)
        if self.text is not None:
            body["text"] = self.text
        if self.timeout_seconds is not None:
            if isinstance(self.timeout_seconds, bool) or int(self.timeout_seconds) != self.timeout_seconds:
                raise ValueError("timeout_seconds is a whole number of seconds")
            if self.timeout_seconds < 1:
                raise ValueError("timeout_seconds must be at least 1")
            body["timeout_seconds"] = int(self.timeout_seconds)
        if self.callback_url is not None:
            body["callback_url"] = self.callback_url
        return body


def _strings(name: str, values: Iterable[str]) -> list[str]:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} is a list of strings, not one string")
    return [str(v) for v in values]


def _actions(name: str, actions: Sequence[Action | Mapping[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(actions, Mapping):
        raise TypeError(f"{name} is a list of actions, e.g. [{{'name': 'run_migration', 'args': {{}}}}]")
    out = []
    for i, action in enumerate(actions):
        if not isinstance(action, Mapping) or not isinstance(action.get("name"), str):
            raise ValueError(f"{name}[{i}] needs a name")
        item = dict(action)
        item.setdefault("args", {})
        out.append(item)
    if not out:
        raise ValueError(f"{name} must hold at least one action")
    return out


def _policy(policy: Policy | Mapping[str, Any]) -> dict[str, Any]:
    # Passed through as is: the bridge validates it and names the key at fault.
    if not isinstance(policy, Mapping):
        raise TypeError(f"policy is a dict, e.g. {{'quorum': 2, 'approvers': [...]}}, not {type(policy).__name__}")
    return dict(policy)


def _review_configs(configs: Sequence[ReviewConfig | Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    return None if configs is None else [dict(c) for c in configs]


def approval_body(
    actions: Sequence[Action | Mapping[str, Any]],
    common: CommonFields,
    review_configs: Sequence[ReviewConfig | Mapping[str, Any]] | None = None,
    policy: Policy | Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An approval of tool calls, seed 002 shape: ``actions`` (+ ``review_configs``,
    + the request's own decision ``policy``)."""
    body = common.to_dict()
    body["actions"] = _actions("actions", actions)
    configs = _review_configs(review_configs)
    if configs is not None:
        body["review_configs"] = configs
    if policy is not None:
        body["policy"] = _policy(policy)
    return body


def action_requests_body(
    action_requests: Sequence[Action | Mapping[str, Any]],
    common: CommonFields,
    review_configs: Sequence[ReviewConfig | Mapping[str, Any]] | None = None,
    policy: Policy | Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The seed 000 / LangChain shape: ``action_requests`` (+ ``review_configs``)."""
    body = common.to_dict()
    body["action_requests"] = _actions("action_requests", action_requests)
    configs = _review_configs(review_configs)
    if configs is not None:
        body["review_configs"] = configs
    if policy is not None:
        body["policy"] = _policy(policy)
    return body


def questions_body(questions: Sequence[Question | Mapping[str, Any]], common: CommonFields) -> dict[str, Any]:
    """Structured questions: ``questions: [{question, header?, multiSelect, options}]``."""
    if isinstance(questions, Mapping):
        raise TypeError("questions is a list of questions")
    out = []
    for i, q in enumerate(questions):
        if not isinstance(q, Mapping) or not isinstance(q.get("question"), str):
            raise ValueError(f"questions[{i}] needs a question text")
        item = dict(q)
        if "options" in item:
            item["options"] = [_option(o) for o in item["options"]]
        out.append(item)
    if not out:
        raise ValueError("questions must hold at least one question")
    body = common.to_dict()
    body["questions"] = out
    return body


def _option(option: Any) -> Any:
    # A bare string is taken as a label, for convenience.
    return {"label": option} if isinstance(option, str) else dict(option) if isinstance(option, Mapping) else option


def choices_body(
    question: str, choices: Sequence[str], common: CommonFields, allow_freeform: bool = True
) -> dict[str, Any]:
    """One question with string choices (seed 003): ``question``, ``choices``,
    ``allow_freeform`` (typed text offered besides the choices)."""
    if isinstance(choices, (str, bytes)):
        raise TypeError("choices is a list of strings")
    body = common.to_dict()
    body["question"] = question
    body["choices"] = [str(c) for c in choices]
    body["allow_freeform"] = bool(allow_freeform)
    return body
