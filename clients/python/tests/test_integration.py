"""Against the real hitl-bridge binary: requests pushed over HTTP, shown on the bridge's
console, answered by typing on its stdin (see src/platform/console/)."""

from __future__ import annotations

import json
import re
import threading
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from bridge_process import CONSOLE_NAME, BridgeProcess, Console

from hitl_bridge_client import (
    AsyncHitlClient,
    CommonFields,
    HitlApiError,
    HitlClient,
    RequestCancelled,
    RequestExpired,
    Target,
    approval_body,
    verify_signature,
)

pytestmark = pytest.mark.integration

CONSOLE = [Target.console()]
TRADE = {"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100, "side": "buy"}}


def new_key(label: str) -> str:
    return f"py-{label}-{uuid.uuid4().hex[:10]}"


def shown(key: str) -> str:
    """The first line the console prints for a request: `┌ approval KEY · …`."""
    return rf"^┌ (approval|question) {re.escape(key)} "


def console_of(bridge: BridgeProcess) -> Console:
    assert bridge.console is not None
    return bridge.console


def test_approval_approved_on_the_console(bridge: BridgeProcess, client: HitlClient) -> None:
    key = new_key("approve")
    console = console_of(bridge)
    with console.answering((shown(key), None), (r"^execute_trade\? .*\[a\]pprove", "a")):
        approval = client.request_approval(
            [TRADE],
            targets=CONSOLE,
            text="Buy 100 VNM?",
            timeout_seconds=120,
            approval_key=key,
            wait_timeout=30,
        )
    assert approval.approval_key == key
    assert approval.decisions == [{"type": "approve"}]
    assert approval.approved
    assert approval.decided_by is not None
    assert approval.decided_by.name == CONSOLE_NAME
    assert approval.decided_by.platform == "console"
    assert approval.decided_at is not None
    console.expect(rf"^✔ {re.escape(key)} decided by {CONSOLE_NAME}")
    # The state stays readable afterwards.
    state = client.get(key)
    assert state.status == "resolved" and state.decisions == [{"type": "approve"}]


def test_approval_rejected_with_a_reason(bridge: BridgeProcess, client: HitlClient) -> None:
    key = new_key("reject")
    console = console_of(bridge)
    with console.answering((shown(key), None), (r"^drop_table\? ", "r too risky on a Friday")):
        approval = client.request_approval(
            [{"name": "drop_table", "args": {"table": "orders"}, "description": "Drop the orders table"}],
            targets=CONSOLE,
            approvers=["console:console"],
            approval_key=key,
            session_id="py-integration",
            wait_timeout=30,
        )
    assert approval.decisions == [{"type": "reject", "message": "too risky on a Friday"}]
    assert not approval.approved
    assert approval.state.session_id == "py-integration"


def test_approval_edited(bridge: BridgeProcess, client: HitlClient) -> None:
    key = new_key("edit")
    console = console_of(bridge)
    edited = {"symbol": "VNM", "quantity": 50, "side": "buy"}
    with console.answering((shown(key), None), (r"^execute_trade\? .*\[e\]dit", "e " + json.dumps(edited))):
        approval = client.request_approval([TRADE], targets=CONSOLE, approval_key=key, wait_timeout=30)
    assert approval.decisions == [{"type": "edit", "edited_action": {"name": "execute_trade", "args": edited}}]
    assert not approval.approved


def test_ask_two_questions(bridge: BridgeProcess, client: HitlClient) -> None:
    key = new_key("ask")
    console = console_of(bridge)
    questions = [
        {
            "question": "Which environment?",
            "header": "Env",
            "multiSelect": False,
            "options": [{"label": "staging"}, {"label": "production (Recommended)", "description": "the real one"}],
        },
        {
            "question": "Which checks should run?",
            "header": "Checks",
            "multi_select": True,
            "options": [{"label": "lint"}, {"label": "unit"}, {"label": "e2e"}],
        },
    ]
    with console.answering(
        (shown(key), None),
        (r"^\[1/2\] Env$", None),
        (r"^answer with a number", "2"),
        (r"^\[2/2\] Checks$", None),
        (r"^answer with numbers separated by commas", "1,3"),
    ):
        answers = client.ask(questions, targets=CONSOLE, approval_key=key, wait_timeout=30)
    assert answers.answers == {
        "Which environment?": "production (Recommended)",
        "Which checks should run?": "lint, e2e",
    }
    assert answers.selected_options == [["production (Recommended)"], ["lint", "e2e"]]
    assert answers.decided_by is not None and answers.decided_by.name == CONSOLE_NAME


def test_ask_choices_with_typed_text(bridge: BridgeProcess, client: HitlClient) -> None:
    key = new_key("choices")
    console = console_of(bridge)
    with console.answering((shown(key), None), (r"^answer with a number", "v3-rc1")):
        answers = client.ask(
            question="Which release?", choices=["v1", "v2"], targets=CONSOLE, approval_key=key, wait_timeout=30
        )
    assert answers.answers == {"Which release?": "v3-rc1"}
    assert answers.selected_options == [["v3-rc1"]]


def test_cancel_from_another_thread(bridge: BridgeProcess, client: HitlClient) -> None:
    key = new_key("cancel")
    console = console_of(bridge)

    def cancel_when_shown() -> None:
        console.expect(shown(key))
        with HitlClient(bridge.base_url, bridge.token) as other:
            assert other.cancel(key).status == "cancelled"

    join = console.in_background(cancel_when_shown)
    with pytest.raises(RequestCancelled) as info:
        client.request_approval([TRADE], targets=CONSOLE, approval_key=key, wait_timeout=30)
    join()
    assert info.value.state.status == "cancelled"
    assert info.value.state.reply is None
    console.expect(rf"^✖ {re.escape(key)} ")
    # Cancelling what has ended is a conflict.
    with pytest.raises(HitlApiError) as again:
        client.cancel(key)
    assert again.value.status == 409


def test_short_timeout_expires_with_the_reject_decision(bridge: BridgeProcess, client: HitlClient) -> None:
    key = new_key("expire")
    console = console_of(bridge)
    with pytest.raises(RequestExpired) as info:
        client.request_approval([TRADE], targets=CONSOLE, timeout_seconds=1, approval_key=key, wait_timeout=20)
    assert info.value.state.status == "expired"
    assert info.value.decisions == [{"type": "reject", "message": "timed out after 1 s without a human decision"}]
    console.expect(rf"^⌛ {re.escape(key)} expired")


def test_policy_is_validated_and_its_fallback_is_the_deadline(bridge: BridgeProcess, client: HitlClient) -> None:
    with pytest.raises(HitlApiError) as refused:
        client.request_approval([TRADE], targets=CONSOLE, policy={"quorum": 0}, wait_timeout=10)
    assert (refused.value.status, refused.value.code, refused.value.field) == (422, "invalid_policy", "policy.quorum")
    assert refused.value.message == "must be between 1 and 50, not 0"

    key = new_key("policy")
    console = console_of(bridge)
    body = approval_body(
        [TRADE],
        CommonFields(CONSOLE, timeout_seconds=3600, approval_key=key),
        policy={"escalation": [{"after": "2m", "fallback": "reject"}]},
    )
    started = datetime.now(timezone.utc)
    state = client.create(body)
    assert state.is_pending and state.expires_at is not None
    left = (state.expires_at - started).total_seconds()
    assert 110 < left <= 121, f"the fallback's 2 min, not the hour asked for: {left} s"
    assert client.create(body).status == "pending", "the same body again"
    other = {**body, "policy": {"escalation": [{"after": "3m", "fallback": "reject"}]}}
    with pytest.raises(HitlApiError) as conflict:
        client.create(other)
    assert conflict.value.status == 409
    console.expect(shown(key))
    assert client.cancel(key).status == "cancelled"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_async_client_approval(bridge: BridgeProcess) -> None:
    key = new_key("async")
    console = console_of(bridge)
    async with AsyncHitlClient(bridge.base_url, bridge.token, poll_interval=0.1) as client:
        with console.answering((shown(key), None), (r"^execute_trade\? ", "a")):
            approval = await client.request_approval([TRADE], targets=CONSOLE, approval_key=key, wait_timeout=30)
        assert approval.decisions == [{"type": "approve"}]
        assert approval.decided_by is not None and approval.decided_by.name == CONSOLE_NAME
        assert (await client.get(key)).status == "resolved"


def test_contract_idempotency_listing_and_errors(bridge: BridgeProcess, client: HitlClient) -> None:
    key = new_key("contract")
    body: dict[str, Any] = {
        "approval_key": key,
        "targets": [{"platform": "console"}],
        "actions": [{"name": "restart_service", "args": {"service": "api"}}],
        "timeout_seconds": 120,
    }
    headers = {"Authorization": f"Bearer {bridge.token}"}
    with httpx.Client(base_url=bridge.base_url, headers=headers, timeout=10) as http:
        try:
            first = http.post("/v1/requests", json=body)
            assert first.status_code == 201, first.text
            created = first.json()
            assert created["approval_key"] == key and created["status"] == "pending"
            assert created["expires_at"]

            # The same body again: 200 with the current state.
            again = http.post("/v1/requests", json=body)
            assert again.status_code == 200, again.text
            assert again.json()["status"] == "pending"

            # Another body under the same key: 409.
            with pytest.raises(HitlApiError) as conflict:
                client.create({**body, "text": "something else"})
            assert conflict.value.status == 409

            assert key in [s.approval_key for s in client.pending()]
            state = client.get(key, wait=1)
            assert state.status == "pending" and state.expires_at is not None and state.reply is None
        finally:
            cancelled = client.cancel(key)
        assert cancelled.status == "cancelled"
        assert key not in [s.approval_key for s in client.pending()]

        # 400: not JSON.
        malformed = http.post("/v1/requests", content=b"{not json", headers={"Content-Type": "application/json"})
        assert malformed.status_code == 400
        assert malformed.json()["error"]["code"]

        # 413: over 1 MiB.
        big = http.post("/v1/requests", json={**body, "approval_key": new_key("big"), "text": "x" * (1024 * 1024 + 10)})
        assert big.status_code == 413

    # 401: no or a wrong token.
    with HitlClient(bridge.base_url, "wrong-token") as intruder, pytest.raises(HitlApiError) as unauthorized:
        intruder.pending()
    assert unauthorized.value.status == 401 and unauthorized.value.code

    # 404: unknown key.
    with pytest.raises(HitlApiError) as missing:
        client.get(new_key("missing"))
    assert missing.value.status == 404
    with pytest.raises(HitlApiError) as missing_cancel:
        client.cancel(new_key("missing"))
    assert missing_cancel.value.status == 404

    # 422: no shape, two shapes, empty options (with the JSON path).
    base = {"targets": [{"platform": "console"}]}
    invalid: list[tuple[dict[str, Any], str | None]] = [
        (base, None),
        ({**base, "actions": [TRADE], "question": "Q?", "choices": ["a"]}, None),
        ({**base, "questions": [{"question": "Q?", "options": []}]}, "questions[0].options"),
        ({"targets": [{"platform": "carrier-pigeon"}], "actions": [TRADE]}, None),
        ({"targets": [], "actions": [TRADE]}, "targets"),
    ]
    for bad, field in invalid:
        with pytest.raises(HitlApiError) as refused:
            client.create(bad)
        assert refused.value.status == 422, bad
        assert refused.value.code, bad
        if field is not None:
            assert refused.value.field == field
    assert client.pending() == []


class _Receiver(BaseHTTPRequestHandler):
    received: list[tuple[dict[str, str], bytes]] = []
    arrived = threading.Event()

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        type(self).received.append(({k.lower(): v for k, v in self.headers.items()}, body))
        type(self).arrived.set()
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def test_callback_is_signed(bridge: BridgeProcess, client: HitlClient) -> None:
    key = new_key("callback")
    console = console_of(bridge)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hitl"
        with console.answering((shown(key), None), (r"^execute_trade\? ", "a")):
            client.request_approval([TRADE], targets=CONSOLE, approval_key=key, callback_url=url, wait_timeout=30)
        assert _Receiver.arrived.wait(15), "no callback arrived"
        headers, body = _Receiver.received[0]
        assert verify_signature(bridge.token, headers.get("x-hitl-timestamp"), body, headers.get("x-hitl-signature"))
        assert not verify_signature("other", headers.get("x-hitl-timestamp"), body, headers.get("x-hitl-signature"))
        sent = json.loads(body)
        assert sent["approval_key"] == key and sent["status"] == "resolved"
        assert sent["reply"] == {"decisions": [{"type": "approve"}]}
        assert sent == client.get(key).raw
    finally:
        server.shutdown()
        server.server_close()
