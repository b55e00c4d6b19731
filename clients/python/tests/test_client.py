"""The clients against httpx.MockTransport: URLs, headers, errors, waiting, outcomes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import httpx
import pytest

from hitl_bridge_client import (
    DEFAULT_BASE_URL,
    AsyncHitlClient,
    HitlApiError,
    HitlClient,
    RequestCancelled,
    RequestExpired,
    RequestState,
    Target,
    WaitTimeout,
)

KEY = "deploy-42_1"
EXPIRES = "2030-01-02T03:04:05.123456789Z"


def pending(key: str = KEY) -> dict[str, Any]:
    return {"approval_key": key, "status": "pending", "expires_at": EXPIRES}


def resolved_approval(*decisions: dict[str, Any], note: str | None = None) -> dict[str, Any]:
    reply: dict[str, Any] = {"decisions": list(decisions)}
    if note is not None:
        reply["user_edit_content"] = note
    return {
        "approval_key": KEY,
        "session_id": "deploy-42",
        "status": "resolved",
        "expires_at": EXPIRES,
        "decided_by": {"platform": "telegram", "id": "123456", "name": "Thảo"},
        "decided_at": "2030-01-01T10:00:00+07:00",
        "reply": reply,
    }


class Bridge:
    """A scripted bridge: each call pops the next response; requests are recorded."""

    def __init__(self, *responses: httpx.Response | Callable[[httpx.Request], httpx.Response]) -> None:
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if not self.responses:
            raise AssertionError(f"unexpected request {request.method} {request.url}")
        next_ = self.responses.pop(0)
        return next_(request) if callable(next_) else next_

    def client(self, **kwargs: Any) -> HitlClient:
        kwargs.setdefault("poll_interval", 0.01)
        return HitlClient("http://bridge:8790/", "s3cret", transport=httpx.MockTransport(self), **kwargs)

    def async_client(self, **kwargs: Any) -> AsyncHitlClient:
        kwargs.setdefault("poll_interval", 0.01)
        return AsyncHitlClient("http://bridge:8790", "s3cret", transport=httpx.MockTransport(self), **kwargs)

    def waits(self) -> list[str | None]:
        return [r.url.params.get("wait") for r in self.requests if r.method == "GET"]


def ok(body: Any, status: int = 200) -> httpx.Response:
    return httpx.Response(status, json=body)


def error(status: int, code: str, message: str, field: str | None = None) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message, "field": field}})


# --- construction and env defaults ---------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    monkeypatch.delenv("HITL_BRIDGE_URL", raising=False)
    monkeypatch.delenv("HITL_BRIDGE_TOKEN", raising=False)
    yield monkeypatch


def test_env_defaults(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("HITL_BRIDGE_URL", "http://bridge.test:9999/")
    clean_env.setenv("HITL_BRIDGE_TOKEN", "from-env")
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return ok({"requests": []})

    with HitlClient(transport=httpx.MockTransport(handler)) as client:
        assert client.base_url == "http://bridge.test:9999"
        assert client.pending() == []
    assert str(seen[0].url) == "http://bridge.test:9999/v1/requests?status=pending"
    assert seen[0].headers["authorization"] == "Bearer from-env"


def test_arguments_win_over_env(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("HITL_BRIDGE_URL", "http://env:1")
    clean_env.setenv("HITL_BRIDGE_TOKEN", "from-env")
    client = HitlClient("http://arg:2", "from-arg")
    assert client.base_url == "http://arg:2"
    assert client._cfg.headers["Authorization"] == "Bearer from-arg"
    client.close()


def test_default_base_url(clean_env: pytest.MonkeyPatch) -> None:
    client = HitlClient(token="t")
    assert client.base_url == DEFAULT_BASE_URL == "http://127.0.0.1:8790"
    client.close()


def test_missing_token_fails_early(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="HITL_BRIDGE_TOKEN"):
        HitlClient()
    with pytest.raises(ValueError, match="HITL_BRIDGE_TOKEN"):
        AsyncHitlClient()


def test_passed_http_client_is_not_closed() -> None:
    http = httpx.Client(transport=httpx.MockTransport(lambda r: ok(pending())))
    with HitlClient("http://b", "t", http_client=http) as client:
        client.get(KEY)
    assert not http.is_closed
    http.close()


# --- low level -------------------------------------------------------------------------


def test_create_posts_json_with_bearer() -> None:
    bridge = Bridge(ok(pending(), 201))
    body = {"targets": [{"platform": "console"}], "question": "Q?", "choices": ["a"]}
    with bridge.client() as client:
        state = client.create(body)
    request = bridge.requests[0]
    assert request.method == "POST"
    assert str(request.url) == "http://bridge:8790/v1/requests"
    assert request.headers["authorization"] == "Bearer s3cret"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.content) == body
    assert state.approval_key == KEY and state.status == "pending" and state.is_pending
    assert state.expires_at == datetime(2030, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)
    assert state.reply is None and state.decided_by is None


def test_get_parses_the_state_body() -> None:
    bridge = Bridge(ok(resolved_approval({"type": "approve"}, note="ship it")))
    with bridge.client() as client:
        state = client.get(KEY, wait=30)
    assert bridge.requests[0].url.path == f"/v1/requests/{KEY}"
    assert bridge.waits() == ["30"]
    assert state.status == "resolved" and not state.is_pending
    assert state.session_id == "deploy-42"
    assert state.decided_by is not None and state.decided_by.name == "Thảo"
    assert state.decided_by.platform == "telegram" and state.decided_by.id == "123456"
    assert state.decided_at is not None and state.decided_at.utcoffset() is not None
    assert state.decided_at.astimezone(timezone.utc).hour == 3
    assert state.decisions == [{"type": "approve"}]
    assert state.raw["reply"]["user_edit_content"] == "ship it"


def test_get_clamps_wait_and_quotes_the_key() -> None:
    bridge = Bridge(ok(pending("a/b c")), ok(pending("a/b c")))
    with bridge.client() as client:
        client.get("a/b c", wait=600)
        client.get("a/b c")
    assert bridge.requests[0].url.raw_path == b"/v1/requests/a%2Fb%20c?wait=60"
    assert bridge.waits() == ["60", None]


def test_cancel_and_pending() -> None:
    cancelled = {"approval_key": KEY, "status": "cancelled", "expires_at": EXPIRES}
    bridge = Bridge(ok(cancelled), ok({"requests": [pending("a"), pending("b")]}))
    with bridge.client() as client:
        state = client.cancel(KEY)
        listed = client.pending()
    assert bridge.requests[0].method == "DELETE"
    assert bridge.requests[0].url.path == f"/v1/requests/{KEY}"
    assert state.status == "cancelled" and state.reply is None
    assert str(bridge.requests[1].url) == "http://bridge:8790/v1/requests?status=pending"
    assert [s.approval_key for s in listed] == ["a", "b"]


def test_pending_follows_every_page() -> None:
    bridge = Bridge(
        ok({"requests": [pending("a"), pending("b")], "next_cursor": "MTc6YQ"}),
        ok({"requests": [pending("c")], "next_cursor": None}),
    )
    with bridge.client() as client:
        listed = client.pending()
    assert [s.approval_key for s in listed] == ["a", "b", "c"]
    assert str(bridge.requests[0].url) == "http://bridge:8790/v1/requests?status=pending"
    assert str(bridge.requests[1].url) == "http://bridge:8790/v1/requests?status=pending&cursor=MTc6YQ"


def test_health() -> None:
    bridge = Bridge(httpx.Response(200, text="ok"))
    with bridge.client() as client:
        assert client.health()
    assert bridge.requests[0].url.path == "/healthz"

    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with HitlClient("http://b", "t", transport=httpx.MockTransport(down)) as client:
        assert not client.health()


# --- errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "field"),
    [
        (400, "malformed_json", None),
        (401, "unauthorized", None),
        (404, "not_found", None),
        (409, "conflict", None),
        (413, "too_large", None),
        (422, "invalid", "questions[0].options"),
    ],
)
def test_error_bodies_become_hitl_api_error(status: int, code: str, field: str | None) -> None:
    bridge = Bridge(error(status, code, "it went wrong", field))
    with bridge.client() as client, pytest.raises(HitlApiError) as info:
        client.create({"targets": [{"platform": "console"}]})
    e = info.value
    assert (e.status, e.code, e.message, e.field) == (status, code, "it went wrong", field)
    assert e.body == {"error": {"code": code, "message": "it went wrong", "field": field}}
    assert str(status) in str(e) and code in str(e)


def test_error_without_json_body() -> None:
    bridge = Bridge(httpx.Response(502, text="<html>Bad Gateway</html>"))
    with bridge.client() as client, pytest.raises(HitlApiError) as info:
        client.get(KEY)
    assert info.value.status == 502
    assert info.value.code == "http_502"
    assert "Bad Gateway" in info.value.message
    assert info.value.field is None and info.value.body is None


def test_error_with_other_json_body() -> None:
    bridge = Bridge(ok({"detail": "nope"}, 404))
    with bridge.client() as client, pytest.raises(HitlApiError) as info:
        client.get(KEY)
    assert (info.value.status, info.value.code) == (404, "http_404")
    assert info.value.body == {"detail": "nope"}


def test_success_that_is_not_json() -> None:
    bridge = Bridge(httpx.Response(200, text="hello"))
    with bridge.client() as client, pytest.raises(HitlApiError) as info:
        client.get(KEY)
    assert info.value.code == "invalid_response"


def test_errors_in_wait_are_not_swallowed() -> None:
    bridge = Bridge(error(404, "not_found", "no such request"))
    with bridge.client() as client, pytest.raises(HitlApiError) as info:
        client.wait(KEY)
    assert info.value.status == 404


# --- waiting -------------------------------------------------------------------------


def test_wait_loops_until_not_pending() -> None:
    bridge = Bridge(ok(pending()), ok(pending()), ok(resolved_approval({"type": "approve"})))
    with bridge.client() as client:
        state = client.wait(KEY)
    assert state.status == "resolved"
    assert bridge.waits() == ["60", "60", "60"]


def test_wait_asks_for_no_more_than_the_local_timeout() -> None:
    bridge = Bridge(ok(pending()), ok(resolved_approval({"type": "approve"})))
    with bridge.client() as client:
        client.wait(KEY, timeout=12.5)
    first = int(bridge.waits()[0] or 0)
    assert 11 <= first <= 12


def test_wait_timeout_raises_with_the_last_state() -> None:
    bridge = Bridge(*[ok(pending()) for _ in range(200)])
    started = time.monotonic()
    with bridge.client() as client, pytest.raises(WaitTimeout) as info:
        client.wait(KEY, timeout=0.3)
    assert time.monotonic() - started < 2
    assert info.value.approval_key == KEY
    assert info.value.state is not None and info.value.state.is_pending
    # Below one second left, it polls without ?wait= and sleeps in between.
    assert set(bridge.waits()) == {None}
    assert 2 <= len(bridge.requests) < 100


def test_wait_retries_connection_errors_and_502() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    bridge = Bridge(refuse, httpx.Response(502), ok(resolved_approval({"type": "approve"})))
    with bridge.client() as client:
        client._cfg.backoff = lambda failures: 0.01  # type: ignore[method-assign]
        assert client.wait(KEY).status == "resolved"
    assert len(bridge.requests) == 3


def test_wait_gives_up_after_max_retries() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    bridge = Bridge(*[refuse for _ in range(3)])
    with bridge.client(max_retries=2) as client:
        client._cfg.backoff = lambda failures: 0.01  # type: ignore[method-assign]
        with pytest.raises(httpx.ConnectError):
            client.wait(KEY)
    assert len(bridge.requests) == 3


# --- outcomes ------------------------------------------------------------------------


def test_request_approval_returns_the_decisions() -> None:
    edit = {"type": "edit", "edited_action": {"name": "execute_trade", "args": {"quantity": 50}}}
    bridge = Bridge(ok(pending(), 201), ok(pending()), ok(resolved_approval({"type": "approve"}, edit)))
    with bridge.client() as client:
        approval = client.request_approval(
            [{"name": "notify", "args": {}}, {"name": "execute_trade", "args": {"quantity": 100}}],
            targets=[Target.console()],
        )
    assert approval.approval_key == KEY
    assert approval.decisions == [{"type": "approve"}, edit]
    assert not approval.approved
    assert approval.decision == {"type": "approve"}
    assert approval.decided_by is not None and approval.decided_by.name == "Thảo"
    assert approval.decided_at is not None
    assert approval.raw["status"] == "resolved"
    assert approval.user_edit_content is None


def test_approved_means_every_action_approved() -> None:
    bridge = Bridge(ok(pending(), 201), ok(resolved_approval({"type": "approve"}, note="go")))
    with bridge.client() as client:
        approval = client.request_approval([{"name": "x", "args": {}}], targets=[Target.console()])
    assert approval.approved
    assert approval.user_edit_content == "go"


def test_expired_approval_raises_with_the_reject_decisions() -> None:
    timed_out = {"type": "reject", "message": "timed out after 1 s without a human decision"}
    expired = {"approval_key": KEY, "status": "expired", "expires_at": EXPIRES, "reply": {"decisions": [timed_out]}}
    bridge = Bridge(ok(pending(), 201), ok(expired))
    with bridge.client() as client, pytest.raises(RequestExpired) as info:
        client.request_approval([{"name": "x", "args": {}}], targets=[Target.console()], timeout_seconds=1)
    assert info.value.decisions == [timed_out]
    assert info.value.state.status == "expired"
    assert info.value.approval_key == KEY


def test_expired_question_raises_without_decisions() -> None:
    expired = {"approval_key": KEY, "status": "expired", "expires_at": EXPIRES}
    bridge = Bridge(ok(pending(), 201), ok(expired))
    with bridge.client() as client, pytest.raises(RequestExpired) as info:
        client.ask(question="Q?", choices=["a"], targets=[Target.console()])
    assert info.value.decisions == []
    assert info.value.state.reply is None


@pytest.mark.parametrize("ask", [False, True])
def test_cancelled_raises(ask: bool) -> None:
    cancelled = {"approval_key": KEY, "status": "cancelled", "expires_at": EXPIRES}
    bridge = Bridge(ok(pending(), 201), ok(cancelled))
    with bridge.client() as client, pytest.raises(RequestCancelled) as info:
        if ask:
            client.ask(question="Q?", choices=["a"], targets=[Target.console()])
        else:
            client.request_approval([{"name": "x", "args": {}}], targets=[Target.console()])
    assert info.value.state.status == "cancelled"


def test_idempotent_replay_of_an_ended_request_does_not_wait() -> None:
    # The same body again under the same key: 200 with the current (final) state.
    bridge = Bridge(ok(resolved_approval({"type": "reject", "message": "no"})))
    with bridge.client() as client:
        approval = client.request_approval([{"name": "x", "args": {}}], targets=[Target.console()], approval_key=KEY)
    assert approval.decisions == [{"type": "reject", "message": "no"}]
    assert len(bridge.requests) == 1


def test_ask_returns_answers_and_selected_options() -> None:
    answered = {
        "approval_key": KEY,
        "status": "resolved",
        "expires_at": EXPIRES,
        "decided_by": {"platform": "console", "id": "console", "name": "CI"},
        "decided_at": "2030-01-01T00:00:01Z",
        "reply": {
            "answers": {"Env?": "production (Recommended)", "Checks?": "lint, e2e"},
            "selected_options": [["production (Recommended)"], ["lint", "e2e"]],
        },
    }
    bridge = Bridge(ok(pending(), 201), ok(answered))
    with bridge.client() as client:
        answers = client.ask(
            [
                {"question": "Env?", "options": [{"label": "staging"}, {"label": "production (Recommended)"}]},
                {"question": "Checks?", "multiSelect": True, "options": [{"label": "lint"}, {"label": "e2e"}]},
            ],
            targets=[Target.console()],
        )
    assert answers.answers == {"Env?": "production (Recommended)", "Checks?": "lint, e2e"}
    assert answers["Checks?"] == "lint, e2e"
    assert answers.selected_options == [["production (Recommended)"], ["lint", "e2e"]]
    assert answers.decided_by is not None and answers.decided_by.name == "CI"


def test_quorum_votes_and_settled_by() -> None:
    body = {
        **pending(),
        "policy": "migrations",
        "quorum": 2,
        "votes": [
            {
                "by": {"platform": "telegram", "id": "1", "name": "Lan"},
                "at": "2030-01-01T10:00:00.000Z",
                "decisions": [{"type": "approve"}],
            }
        ],
    }
    state = RequestState.from_json(body)
    assert state.policy == "migrations" and state.quorum == 2 and len(state.votes) == 1
    vote = state.votes[0]
    assert vote.by is not None and vote.by.name == "Lan" and vote.decisions == [{"type": "approve"}]
    assert vote.at == datetime(2030, 1, 1, 10, tzinfo=timezone.utc)
    assert state.settled_by is None
    settled = {"fallback": {"decision": "reject", "after_seconds": 1800}}
    expired = RequestState.from_json({"approval_key": KEY, "status": "expired", "settled_by": settled})
    assert expired.settled_by == settled and expired.policy is None and expired.quorum is None and expired.votes == []


def test_state_parsing_is_lenient() -> None:
    state = RequestState.from_json(
        {"approval_key": "k", "status": "resolved", "expires_at": "garbage", "reply": 3, "quorum": "2", "votes": {}}
    )
    assert state.expires_at is None and state.reply is None
    assert state.quorum is None and state.votes == [] and state.settled_by is None
    assert state.decisions == [] and state.answers == {} and state.selected_options == []
    with pytest.raises(ValueError):
        RequestState.from_json(["not", "an", "object"])


# --- async -----------------------------------------------------------------------------


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_async_client_round_trip() -> None:
    bridge = Bridge(
        ok(pending(), 201),
        ok(pending()),
        ok(resolved_approval({"type": "approve"})),
        ok({"approval_key": KEY, "status": "cancelled", "expires_at": EXPIRES}),
        ok({"requests": []}),
        error(409, "conflict", "already ended"),
    )
    async with bridge.async_client() as client:
        approval = await client.request_approval([{"name": "x", "args": {}}], targets=[Target.console()])
        assert approval.approved
        assert (await client.cancel(KEY)).status == "cancelled"
        assert await client.pending() == []
        with pytest.raises(HitlApiError) as info:
            await client.get(KEY)
        assert info.value.status == 409
    assert bridge.waits() == ["60", "60", None, None]  # two waits, pending(), get()
    assert all(r.headers["authorization"] == "Bearer s3cret" for r in bridge.requests)


@pytest.mark.anyio
async def test_async_expired_and_cancelled_and_timeout() -> None:
    expired = {
        "approval_key": KEY,
        "status": "expired",
        "reply": {"decisions": [{"type": "reject", "message": "timed out after 1 s without a human decision"}]},
    }
    cancelled = {"approval_key": KEY, "status": "cancelled"}
    bridge = Bridge(ok(pending(), 201), ok(expired), ok(pending(), 201), ok(cancelled))
    bridge.responses += [ok(pending()) for _ in range(100)]
    async with bridge.async_client() as client:
        with pytest.raises(RequestExpired) as info:
            await client.request_approval([{"name": "x", "args": {}}], targets=[Target.console()])
        assert info.value.decisions[0]["type"] == "reject"
        with pytest.raises(RequestCancelled):
            await client.ask(question="Q", choices=["a"], targets=[Target.console()])
        with pytest.raises(WaitTimeout):
            await client.wait(KEY, timeout=0.2)
