"""Wire types of the bridge's HTTP API (docs/protocol.md, part 2) and the results the
high-level calls return.

Requests and replies stay plain JSON-shaped dicts (``TypedDict``), so what you compare or
log is exactly what travels; targets get a small dataclass with constructors, and the
state of a request is parsed into :class:`RequestState`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, TypedDict, Union, cast

__all__ = [
    "Action",
    "Answers",
    "Approval",
    "ApproveDecision",
    "DecidedBy",
    "Decision",
    "EditDecision",
    "EditedAction",
    "Question",
    "QuestionOption",
    "RejectDecision",
    "RequestState",
    "RespondDecision",
    "ReviewConfig",
    "Status",
    "Target",
    "TargetLike",
]

Status = Literal["pending", "resolved", "expired", "cancelled"]
"""A request's status. Anything but ``pending`` is final."""


# --- targets ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """Where the bridge shows a request: a Telegram chat (or forum topic), a Discord
    channel, a direct message to a Telegram or Discord user, or the bridge's terminal.

    Build one with the constructors (``Target.telegram("-1001234567890", thread_id="7")``,
    ``Target.discord_channel("1100…")``, ``Target.discord_user("8035…")``,
    ``Target.telegram_user("123456")``, ``Target.console()``); plain dicts in the wire
    format are accepted wherever a target is.
    """

    platform: str
    chat_id: str | None = None
    thread_id: str | None = None
    channel_id: str | None = None
    user_id: str | None = None

    @classmethod
    def telegram(cls, chat_id: str | int, thread_id: str | int | None = None) -> Target:
        """A Telegram chat, group or channel; ``thread_id`` picks a forum topic."""
        return cls("telegram", chat_id=str(chat_id), thread_id=None if thread_id is None else str(thread_id))

    @classmethod
    def telegram_user(cls, user_id: str | int) -> Target:
        """A private message to a Telegram user (who must have started the bot)."""
        return cls("telegram", user_id=str(user_id))

    @classmethod
    def discord_channel(cls, channel_id: str | int, thread_id: str | int | None = None) -> Target:
        """A Discord channel (or a thread: its own id as ``channel_id``, or ``thread_id``)."""
        return cls("discord", channel_id=str(channel_id), thread_id=None if thread_id is None else str(thread_id))

    @classmethod
    def discord_user(cls, user_id: str | int) -> Target:
        """A direct message to a Discord user."""
        return cls("discord", user_id=str(user_id))

    @classmethod
    def console(cls) -> Target:
        """The terminal of the bridge process (``console.enabled``; ``hitl-bridge demo``)."""
        return cls("console")

    def to_dict(self) -> dict[str, str]:
        """The wire form: the platform and whichever ids are set."""
        out = {"platform": self.platform}
        for key in ("chat_id", "thread_id", "channel_id", "user_id"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


TargetLike = Union[Target, Mapping[str, Any]]
"""A :class:`Target` or its wire form as a dict."""


# --- request shapes --------------------------------------------------------------------


class _ActionBase(TypedDict):
    name: str
    args: dict[str, Any]


class Action(_ActionBase, total=False):
    """One tool call to approve: ``{"name": "run_migration", "args": {...}}``."""

    description: str
    tool_use_id: str


class ReviewConfig(TypedDict, total=False):
    """What may be decided about an action, matched by ``action_name``, else by
    position. ``allowed_decisions`` defaults to approve, edit and reject; ``respond``
    (a comment instead of a decision) only where listed. ``timeout`` (seconds): the
    smallest applies when the request has no ``timeout_seconds``."""

    action_name: str
    allowed_decisions: list[Literal["approve", "edit", "reject", "respond"]]
    timeout: int


class _EscalationStepBase(TypedDict):
    after: Union[int, str]


class EscalationStep(_EscalationStepBase, total=False):
    """One step of a policy's ``escalation``: ``after`` (seconds, or ``"90s"``, ``"5m"``,
    ``"1h30m"``) and exactly one of ``remind`` (``"approvers"``, ``"role:ROLE_ID"`` or
    ``"platform:user_id"``), ``show_in`` (a chat as in the bridge's
    ``routing.channels``, e.g. ``"discord:1300000000000000000"``) or ``fallback``
    (the last step)."""

    remind: str
    show_in: str
    fallback: Literal["approve", "reject", "leave"]


class Policy(TypedDict, total=False):
    """A request's own decision policy (approvals only): who must approve, how many of
    them (``quorum``), what may be remembered, and what happens when nobody answers.
    A fallback's moment becomes the request's deadline. A matching ``[[policies]]``
    entry of the bridge's config overrides it."""

    approvers: list[str]
    approver_roles: list[str]
    quorum: int
    remember: list[Literal["session", "always"]]
    remember_args: Literal["same", "any"]
    escalation: list[EscalationStep]


class _QuestionOptionBase(TypedDict):
    label: str


class QuestionOption(_QuestionOptionBase, total=False):
    """An option of a question. ``input: True`` makes it the free-text slot."""

    description: str
    input: bool


class _QuestionBase(TypedDict):
    question: str
    options: list[QuestionOption]


class Question(_QuestionBase, total=False):
    """One question; ``multiSelect`` and ``multi_select`` are both accepted by the bridge."""

    header: str
    multiSelect: bool
    multi_select: bool


# --- decisions -------------------------------------------------------------------------


class ApproveDecision(TypedDict):
    type: Literal["approve"]


class _RejectBase(TypedDict):
    type: Literal["reject"]


class RejectDecision(_RejectBase, total=False):
    message: str


class EditedAction(TypedDict):
    name: str
    args: dict[str, Any]


class EditDecision(TypedDict):
    type: Literal["edit"]
    edited_action: EditedAction


class RespondDecision(TypedDict):
    type: Literal["respond"]
    message: str


Decision = Union[ApproveDecision, RejectDecision, EditDecision, RespondDecision]
"""One decision per action, in the request's action order."""


# --- state -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DecidedBy:
    """The person who answered."""

    platform: str
    id: str
    name: str

    @classmethod
    def from_json(cls, data: Any) -> DecidedBy | None:
        if not isinstance(data, Mapping):
            return None
        return cls(
            platform=str(data.get("platform", "")),
            id=str(data.get("id", "")),
            name=str(data.get("name", "")),
        )


_FRACTION = re.compile(r"\.(\d+)")


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 time (``Z`` or an offset; any number of fraction digits) as an aware
    datetime; ``None`` when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text[-1] in "zZ":
        text = text[:-1] + "+00:00"
    # Python 3.10's fromisoformat takes 3 or 6 fraction digits only; Rust may send 9.
    text = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], text, count=1)
    if len(text) > 10 and text[10] in "t ":
        text = text[:10] + "T" + text[11:]
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed


@dataclass(frozen=True)
class Vote:
    """One person's vote under a quorum: the full decision set, one per action."""

    by: DecidedBy | None
    at: datetime | None
    decisions: list[Decision]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Vote:
        decisions = data.get("decisions")
        return cls(
            by=DecidedBy.from_json(data.get("by")),
            at=parse_time(data.get("at")),
            decisions=cast("list[Decision]", list(decisions)) if isinstance(decisions, list) else [],
        )


@dataclass(frozen=True)
class RequestState:
    """What ``GET /v1/requests/{approval_key}`` says about a request.

    ``reply`` is the bridge's reply body: ``{"decisions": [...], "user_edit_content"?}``
    for approvals, ``{"answers": {...}, "selected_options": [[...], ...]}`` for
    questions, ``None`` while pending, for expired questions and for cancelled requests.
    ``raw`` is the whole JSON body as received.

    ``policy`` names the decision policy the request is under: the matching
    ``[[policies]]`` entry of the bridge's config, or ``"request"`` for its own.
    Under a policy with a quorum, ``quorum`` is how many people must approve and
    ``votes`` the votes cast so far, in order. ``settled_by`` is set when the policy
    ended the request rather than a person: ``{"fallback": {"decision", "after_seconds"}}``
    or ``{"rule": {"id", "scope", "set_by", "set_at"}}``.
    """

    approval_key: str
    status: str
    expires_at: datetime | None = None
    session_id: str | None = None
    decided_by: DecidedBy | None = None
    decided_at: datetime | None = None
    reply: dict[str, Any] | None = None
    policy: str | None = None
    quorum: int | None = None
    votes: list[Vote] = field(default_factory=list)
    settled_by: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Any) -> RequestState:
        if not isinstance(data, Mapping):
            raise ValueError(f"expected a JSON object for a request state, got {type(data).__name__}")
        reply = data.get("reply")
        session_id = data.get("session_id")
        policy, quorum, votes, settled_by = data.get("policy"), data.get("quorum"), data.get("votes"), data.get("settled_by")
        return cls(
            approval_key=str(data.get("approval_key", "")),
            status=str(data.get("status", "")),
            expires_at=parse_time(data.get("expires_at")),
            session_id=None if session_id is None else str(session_id),
            decided_by=DecidedBy.from_json(data.get("decided_by")),
            decided_at=parse_time(data.get("decided_at")),
            reply=dict(reply) if isinstance(reply, Mapping) else None,
            policy=policy if isinstance(policy, str) else None,
            quorum=quorum if isinstance(quorum, int) and not isinstance(quorum, bool) else None,
            votes=[Vote.from_json(v) for v in votes if isinstance(v, Mapping)] if isinstance(votes, list) else [],
            settled_by=dict(settled_by) if isinstance(settled_by, Mapping) else None,
            raw=dict(data),
        )

    @property
    def is_pending(self) -> bool:
        return self.status == "pending"

    @property
    def decisions(self) -> list[Decision]:
        """The reply's decisions (approvals; also an expired approval's rejections)."""
        decisions = (self.reply or {}).get("decisions")
        return cast("list[Decision]", list(decisions)) if isinstance(decisions, list) else []

    @property
    def answers(self) -> dict[str, str]:
        """The reply's answers (questions): question text → label(s) or typed text."""
        answers = (self.reply or {}).get("answers")
        return dict(answers) if isinstance(answers, Mapping) else {}

    @property
    def selected_options(self) -> list[list[str]]:
        """The reply's chosen labels, one list per question in question order."""
        selected = (self.reply or {}).get("selected_options")
        if not isinstance(selected, list):
            return []
        return [list(s) if isinstance(s, list) else [] for s in selected]


@dataclass(frozen=True)
class Approval:
    """The outcome of :meth:`HitlClient.request_approval`: one decision per action."""

    approval_key: str
    decisions: list[Decision]
    decided_by: DecidedBy | None
    decided_at: datetime | None
    user_edit_content: str | None
    state: RequestState = field(repr=False)

    @classmethod
    def from_state(cls, state: RequestState) -> Approval:
        note = (state.reply or {}).get("user_edit_content")
        return cls(
            approval_key=state.approval_key,
            decisions=state.decisions,
            decided_by=state.decided_by,
            decided_at=state.decided_at,
            user_edit_content=note if isinstance(note, str) else None,
            state=state,
        )

    @property
    def raw(self) -> dict[str, Any]:
        """The state body as the bridge sent it."""
        return self.state.raw

    @property
    def approved(self) -> bool:
        """True when every action was approved as it was asked (no edit, no reject)."""
        return bool(self.decisions) and all(d.get("type") == "approve" for d in self.decisions)

    @property
    def decision(self) -> Decision:
        """The first action's decision: handy when the request had one action."""
        if not self.decisions:
            raise ValueError(f"approval {self.approval_key} carries no decision")
        return self.decisions[0]


@dataclass(frozen=True)
class Answers:
    """The outcome of :meth:`HitlClient.ask`."""

    approval_key: str
    answers: dict[str, str]
    selected_options: list[list[str]]
    decided_by: DecidedBy | None
    decided_at: datetime | None
    state: RequestState = field(repr=False)

    @classmethod
    def from_state(cls, state: RequestState) -> Answers:
        return cls(
            approval_key=state.approval_key,
            answers=state.answers,
            selected_options=state.selected_options,
            decided_by=state.decided_by,
            decided_at=state.decided_at,
            state=state,
        )

    @property
    def raw(self) -> dict[str, Any]:
        """The state body as the bridge sent it."""
        return self.state.raw

    def __getitem__(self, question: str) -> str:
        """The answer to ``question`` (its exact text)."""
        return self.answers[question]
