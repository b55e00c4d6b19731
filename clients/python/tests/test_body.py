"""Request bodies, one per shape, exactly as they go on the wire."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from hitl_bridge_client import (
    CommonFields,
    HitlClient,
    Target,
    action_requests_body,
    approval_body,
    choices_body,
    questions_body,
)


def test_targets_wire_form() -> None:
    assert Target.telegram("-1001234567890", thread_id=7).to_dict() == {
        "platform": "telegram",
        "chat_id": "-1001234567890",
        "thread_id": "7",
    }
    assert Target.telegram(-100123).to_dict() == {"platform": "telegram", "chat_id": "-100123"}
    assert Target.telegram_user(123456).to_dict() == {"platform": "telegram", "user_id": "123456"}
    assert Target.discord_channel("1100000000000000000").to_dict() == {
        "platform": "discord",
        "channel_id": "1100000000000000000",
    }
    assert Target.discord_user("80351110224678912").to_dict() == {
        "platform": "discord",
        "user_id": "80351110224678912",
    }
    assert Target.console().to_dict() == {"platform": "console"}
    assert Target.discord_channel(11, thread_id=12).to_dict() == {
        "platform": "discord",
        "channel_id": "11",
        "thread_id": "12",
    }


def test_dict_targets_get_string_ids() -> None:
    body = CommonFields(targets=[{"platform": "telegram", "chat_id": -100123, "thread_id": 7}]).to_dict()
    assert body["targets"] == [{"platform": "telegram", "chat_id": "-100123", "thread_id": "7"}]


def test_common_fields_all_set() -> None:
    common = CommonFields(
        targets=[Target.telegram("-1001234567890", "7"), {"platform": "discord", "channel_id": "11"}],
        approvers=["telegram:123456", "discord:80351110224678912"],
        approver_roles=["1200000000000000000"],
        text="Nightly deploy of api v2.3 is ready.",
        timeout_seconds=600,
        approval_key="deploy-42_1",
        session_id="deploy-42",
        callback_url="https://agent.example/hitl",
    )
    assert common.to_dict() == {
        "approval_key": "deploy-42_1",
        "session_id": "deploy-42",
        "targets": [
            {"platform": "telegram", "chat_id": "-1001234567890", "thread_id": "7"},
            {"platform": "discord", "channel_id": "11"},
        ],
        "approvers": ["telegram:123456", "discord:80351110224678912"],
        "approver_roles": ["1200000000000000000"],
        "text": "Nightly deploy of api v2.3 is ready.",
        "timeout_seconds": 600,
        "callback_url": "https://agent.example/hitl",
    }


def test_common_fields_minimal_omits_unset() -> None:
    assert CommonFields(targets=[Target.console()]).to_dict() == {"targets": [{"platform": "console"}]}


@pytest.mark.parametrize(
    ("targets", "error"),
    [([], ValueError), (Target.console(), TypeError), ([{"chat_id": "1"}], ValueError), (["console"], TypeError)],
)
def test_bad_targets(targets: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        CommonFields(targets=targets).to_dict()


@pytest.mark.parametrize("timeout", [0, -5, 1.5, True])
def test_bad_timeout(timeout: Any) -> None:
    with pytest.raises(ValueError):
        CommonFields(targets=[Target.console()], timeout_seconds=timeout).to_dict()


def test_approval_body_actions_and_review_configs() -> None:
    body = approval_body(
        [
            {"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100}, "description": "Buy VNM"},
            {"name": "notify"},
        ],
        CommonFields(targets=[Target.console()]),
        review_configs=[{"action_name": "execute_trade", "allowed_decisions": ["approve", "reject"]}],
    )
    assert body == {
        "targets": [{"platform": "console"}],
        "actions": [
            {"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100}, "description": "Buy VNM"},
            {"name": "notify", "args": {}},
        ],
        "review_configs": [{"action_name": "execute_trade", "allowed_decisions": ["approve", "reject"]}],
    }
    assert "action_requests" not in body and "questions" not in body and "question" not in body


def test_action_requests_body() -> None:
    body = action_requests_body(
        [{"name": "run_migration", "args": {"db": "orders"}}],
        CommonFields(targets=[Target.discord_user("8")]),
    )
    assert body == {
        "targets": [{"platform": "discord", "user_id": "8"}],
        "action_requests": [{"name": "run_migration", "args": {"db": "orders"}}],
    }


def test_approval_body_rejects_empty_or_nameless_actions() -> None:
    common = CommonFields(targets=[Target.console()])
    with pytest.raises(ValueError):
        approval_body([], common)
    with pytest.raises(ValueError):
        approval_body([{"args": {}}], common)
    with pytest.raises(TypeError):
        approval_body({"name": "x", "args": {}}, common)  # type: ignore[arg-type]


def test_questions_body_keeps_both_multiselect_spellings_and_string_options() -> None:
    body = questions_body(
        [
            {
                "question": "Nhóm ngành quan tâm?",
                "header": "Ngành",
                "multiSelect": True,
                "options": [{"label": "Ngân hàng"}, {"label": "Khác", "description": "Nhập", "input": True}],
            },
            {"question": "Which env?", "multi_select": False, "options": ["staging", "prod"]},
        ],
        CommonFields(targets=[Target.console()], timeout_seconds=120),
    )
    assert body == {
        "targets": [{"platform": "console"}],
        "timeout_seconds": 120,
        "questions": [
            {
                "question": "Nhóm ngành quan tâm?",
                "header": "Ngành",
                "multiSelect": True,
                "options": [{"label": "Ngân hàng"}, {"label": "Khác", "description": "Nhập", "input": True}],
            },
            {
                "question": "Which env?",
                "multi_select": False,
                "options": [{"label": "staging"}, {"label": "prod"}],
            },
        ],
    }


def test_choices_body() -> None:
    body = choices_body("Pull failed. What now?", ["Retry", "Use mirror"], CommonFields(targets=[Target.console()]))
    assert body == {
        "targets": [{"platform": "console"}],
        "question": "Pull failed. What now?",
        "choices": ["Retry", "Use mirror"],
        "allow_freeform": True,
    }
    closed = choices_body("Pick", ["a"], CommonFields(targets=[Target.console()]), allow_freeform=False)
    assert closed["allow_freeform"] is False


def _capture() -> tuple[HitlClient, list[dict[str, Any]]]:
    sent: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            sent.append(json.loads(request.content))
            return httpx.Response(
                201, json={"approval_key": "k", "status": "pending", "expires_at": "2030-01-01T00:00:00Z"}
            )
        return httpx.Response(200, json={"approval_key": "k", "status": "resolved", "reply": {"answers": {}}})

    return HitlClient("http://bridge", "t", transport=httpx.MockTransport(handler)), sent


def test_ask_sends_questions_shape() -> None:
    client, sent = _capture()
    questions = [{"question": "Q?", "options": [{"label": "A"}, {"label": "B"}]}]
    client.ask(questions, targets=[Target.console()], approval_key="q-1", session_id="s", text="ctx")
    assert sent == [
        {
            "approval_key": "q-1",
            "session_id": "s",
            "targets": [{"platform": "console"}],
            "text": "ctx",
            "questions": questions,
        }
    ]


def test_ask_sends_choices_shape() -> None:
    client, sent = _capture()
    client.ask(question="Q?", choices=["a", "b"], allow_freeform=False, targets=[Target.console()])
    assert sent == [
        {"targets": [{"platform": "console"}], "question": "Q?", "choices": ["a", "b"], "allow_freeform": False}
    ]


def test_ask_needs_exactly_one_shape() -> None:
    client, sent = _capture()
    with pytest.raises(ValueError):
        client.ask(targets=[Target.console()])
    with pytest.raises(ValueError):
        client.ask([{"question": "Q", "options": []}], question="Q", targets=[Target.console()])
    with pytest.raises(ValueError):
        client.ask([{"question": "Q", "options": []}], choices=["a"], targets=[Target.console()])
    assert sent == []


def test_request_approval_sends_actions_shape() -> None:
    client, sent = _capture()
    client.request_approval(
        [{"name": "run_migration", "args": {"db": "orders"}}],
        targets=[Target.telegram("-100", "7"), Target.discord_channel("11")],
        review_configs=[{"action_name": "run_migration", "allowed_decisions": ["approve", "edit", "reject"]}],
        approvers=["telegram:1"],
        approver_roles=["99"],
        text="Nightly",
        timeout_seconds=30,
        approval_key="deploy-42_1",
        session_id="deploy-42",
        callback_url="https://agent.example/hitl",
    )
    assert sent == [
        {
            "approval_key": "deploy-42_1",
            "session_id": "deploy-42",
            "targets": [
                {"platform": "telegram", "chat_id": "-100", "thread_id": "7"},
                {"platform": "discord", "channel_id": "11"},
            ],
            "approvers": ["telegram:1"],
            "approver_roles": ["99"],
            "text": "Nightly",
            "timeout_seconds": 30,
            "callback_url": "https://agent.example/hitl",
            "actions": [{"name": "run_migration", "args": {"db": "orders"}}],
            "review_configs": [{"action_name": "run_migration", "allowed_decisions": ["approve", "edit", "reject"]}],
        }
    ]


POLICY = {
    "approvers": ["telegram:1", "telegram:2"],
    "quorum": 2,
    "escalation": [{"after": "5m", "remind": "approvers"}, {"after": 1800, "fallback": "reject"}],
}


def test_policy_goes_with_approvals_as_is() -> None:
    common = CommonFields([Target.console()])
    body = approval_body([{"name": "run_migration"}], common, policy=POLICY)
    assert body == {
        "targets": [{"platform": "console"}],
        "actions": [{"name": "run_migration", "args": {}}],
        "policy": POLICY,
    }
    assert body["policy"] is not POLICY, "a copy"
    assert action_requests_body([{"name": "a"}], common, policy={"quorum": 1})["policy"] == {"quorum": 1}
    assert "policy" not in approval_body([{"name": "a"}], common)
    with pytest.raises(TypeError):
        approval_body([{"name": "a"}], common, policy="quorum=2")  # type: ignore[arg-type]


def test_request_approval_sends_the_policy() -> None:
    client, sent = _capture()
    client.request_approval([{"name": "run_migration", "args": {}}], targets=[Target.console()], policy=POLICY)
    assert sent[0]["policy"] == POLICY
