"""The clients: :class:`HitlClient` (blocking, ``httpx.Client``) and
:class:`AsyncHitlClient` (``httpx.AsyncClient``). Both have the same methods."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from ._version import __version__
from .body import CommonFields, approval_body, choices_body, questions_body
from .errors import HitlApiError, RequestCancelled, RequestExpired, WaitTimeout
from .types import Action, Answers, Approval, Policy, Question, RequestState, ReviewConfig, TargetLike

try:  # httpx depends on anyio; sleeping through it keeps trio users working.
    from anyio import sleep as _async_sleep
except ImportError:  # pragma: no cover
    from asyncio import sleep as _async_sleep

__all__ = ["DEFAULT_BASE_URL", "MAX_SERVER_WAIT", "AsyncHitlClient", "HitlClient"]

DEFAULT_BASE_URL = "http://127.0.0.1:8790"
"""Where ``hitl-bridge`` serves its HTTP API by default (``http.listen``)."""

MAX_SERVER_WAIT = 60
"""The longest ``?wait=`` the bridge accepts, in seconds."""

ENV_URL = "HITL_BRIDGE_URL"
ENV_TOKEN = "HITL_BRIDGE_TOKEN"

# Statuses worth retrying while waiting: the bridge restarting behind a proxy.
_RETRY_STATUSES = frozenset({502, 503, 504})


class _Config:
    """What both clients share: settings, URLs, and reading responses."""

    def __init__(
        self,
        base_url: str | None,
        token: str | None,
        timeout: float,
        poll_interval: float,
        max_retries: int,
        headers: Mapping[str, str] | None,
    ) -> None:
        base = base_url or os.environ.get(ENV_URL) or DEFAULT_BASE_URL
        secret = token if token is not None else os.environ.get(ENV_TOKEN)
        if not secret:
            raise ValueError(
                f"no API token: pass token=... or set {ENV_TOKEN} (a secret of the bridge's http.api_tokens)"
            )
        self.base_url = base.rstrip("/")
        self.token = secret
        self.timeout = float(timeout)
        self.poll_interval = float(poll_interval)
        self.max_retries = int(max_retries)
        self.headers = {
            "Authorization": f"Bearer {secret}",
            "Accept": "application/json",
            "User-Agent": f"hitl-bridge-client/{__version__}",
            **(headers or {}),
        }

    def url(self, path: str) -> str:
        return self.base_url + path

    @staticmethod
    def request_path(approval_key: str) -> str:
        if not approval_key:
            raise ValueError("approval_key must not be empty")
        return "/v1/requests/" + quote(approval_key, safe="")

    @staticmethod
    def wait_param(wait: float | None) -> dict[str, int]:
        if wait is None:
            return {}
        return {"wait": max(0, min(MAX_SERVER_WAIT, int(wait)))}

    def read_timeout(self, wait: float | None) -> httpx.Timeout:
        # A long poll holds the response for up to `wait` seconds.
        extra = max(0.0, float(wait or 0))
        return httpx.Timeout(self.timeout, read=self.timeout + extra)

    @staticmethod
    def json(response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise HitlApiError.from_response(response)
        try:
            return response.json()
        except ValueError as e:
            raise HitlApiError(
                response.status_code, "invalid_response", f"the bridge sent a body that is not JSON: {e}"
            ) from e

    @classmethod
    def state(cls, response: httpx.Response) -> RequestState:
        data = cls.json(response)
        try:
            return RequestState.from_json(data)
        except ValueError as e:
            raise HitlApiError(response.status_code, "invalid_response", str(e), body=data) from e

    @classmethod
    def page(cls, response: httpx.Response) -> tuple[list[RequestState], str | None]:
        """One page of ``GET /v1/requests``: its states and the cursor of the next."""
        data = cls.json(response)
        items = data.get("requests") if isinstance(data, Mapping) else None
        if not isinstance(items, list):
            raise HitlApiError(response.status_code, "invalid_response", 'expected {"requests": [...]}', body=data)
        cursor = data.get("next_cursor")
        return [RequestState.from_json(item) for item in items], cursor if isinstance(cursor, str) and cursor else None

    @staticmethod
    def pending_params(cursor: str | None) -> dict[str, str]:
        return {"status": "pending"} if cursor is None else {"status": "pending", "cursor": cursor}

    def retryable(self, error: Exception, failures: int) -> bool:
        if failures > self.max_retries:
            return False
        if isinstance(error, httpx.TransportError):
            return True
        return isinstance(error, HitlApiError) and error.status in _RETRY_STATUSES

    @staticmethod
    def backoff(failures: int) -> float:
        return float(min(0.5 * 2 ** (failures - 1), 10.0))


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else deadline - time.monotonic()


def _next_wait(remaining: float | None) -> int:
    """The ``?wait=`` for the next poll: whole seconds, never past the local deadline."""
    if remaining is None:
        return MAX_SERVER_WAIT
    return max(0, min(MAX_SERVER_WAIT, int(remaining)))


def _approval(state: RequestState) -> Approval:
    if state.status == "expired":
        raise RequestExpired(state)
    if state.status == "cancelled":
        raise RequestCancelled(state)
    return Approval.from_state(state)


def _answers(state: RequestState) -> Answers:
    if state.status == "expired":
        raise RequestExpired(state)
    if state.status == "cancelled":
        raise RequestCancelled(state)
    return Answers.from_state(state)


def _ask_body(
    questions: Sequence[Question | Mapping[str, Any]] | None,
    question: str | None,
    choices: Sequence[str] | None,
    allow_freeform: bool,
    common: CommonFields,
) -> dict[str, Any]:
    if (questions is None) == (question is None):
        raise ValueError("pass either questions=[...] or question=... (with choices=[...]), not both")
    if questions is not None:
        if choices is not None:
            raise ValueError("choices go with question=..., not with questions=[...]")
        return questions_body(questions, common)
    assert question is not None
    return choices_body(question, list(choices or []), common, allow_freeform)


class HitlClient:
    """A blocking client of the bridge's HTTP API.

    ``base_url`` defaults to ``$HITL_BRIDGE_URL``, else ``http://127.0.0.1:8790``;
    ``token`` (a secret of the bridge's ``http.api_tokens``) to ``$HITL_BRIDGE_TOKEN``.
    ``timeout`` bounds each HTTP exchange (long polls get their wait on top).
    ``transport`` or ``http_client`` plug in a custom httpx transport or client (a
    client passed in is not closed by this one).

    Use it as a context manager, or call :meth:`close`::

        with HitlClient(token="demo-token") as hitl:
            approval = hitl.request_approval(
                [{"name": "run_migration", "args": {"db": "prod"}}],
                targets=[Target.console()],
            )
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        poll_interval: float = 0.5,
        max_retries: int = 5,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._cfg = _Config(base_url, token, timeout, poll_interval, max_retries, headers)
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(transport=transport, timeout=self._cfg.timeout)

    @property
    def base_url(self) -> str:
        return self._cfg.base_url

    # -- lifecycle --

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> HitlClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- low level --

    def _send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        timeout: httpx.Timeout | None = None,
    ) -> httpx.Response:
        return self._http.request(
            method,
            self._cfg.url(path),
            json=json,
            params=params,
            headers=self._cfg.headers,
            timeout=timeout or self._cfg.timeout,
        )

    def health(self) -> bool:
        """Whether ``GET /healthz`` answers 200."""
        try:
            return self._send("GET", "/healthz").status_code == 200
        except httpx.TransportError:
            return False

    def create(self, body: Mapping[str, Any]) -> RequestState:
        """``POST /v1/requests`` with ``body`` as is. A new request answers 201
        (``approval_key``, ``status``, ``expires_at``); the same body again under the
        same ``approval_key`` answers 200 with the current state. Raises
        :class:`HitlApiError` (409 for another body under an existing key, 422 for an
        invalid one, ...)."""
        return self._cfg.state(self._send("POST", "/v1/requests", json=dict(body)))

    def get(self, approval_key: str, wait: float | None = None) -> RequestState:
        """``GET /v1/requests/{approval_key}``; with ``wait`` (seconds, at most 60) the
        bridge holds the answer until the request leaves ``pending`` or the time passes."""
        params = self._cfg.wait_param(wait)
        return self._cfg.state(
            self._send(
                "GET",
                self._cfg.request_path(approval_key),
                params=params,
                timeout=self._cfg.read_timeout(params.get("wait")),
            )
        )

    def cancel(self, approval_key: str) -> RequestState:
        """``DELETE /v1/requests/{approval_key}``: every copy shows "cancelled". Raises
        :class:`HitlApiError` 404 for an unknown key, 409 when it has already ended."""
        return self._cfg.state(self._send("DELETE", self._cfg.request_path(approval_key)))

    def pending(self) -> list[RequestState]:
        """``GET /v1/requests?status=pending``: this token's requests still waiting,
        oldest first. The bridge answers a page at a time; this follows
        ``next_cursor`` until the last page."""
        found: list[RequestState] = []
        cursor: str | None = None
        while True:
            page, cursor = self._cfg.page(self._send("GET", "/v1/requests", params=self._cfg.pending_params(cursor)))
            found.extend(page)
            if cursor is None:
                return found

    def wait(self, approval_key: str, timeout: float | None = None) -> RequestState:
        """Long-polls until the request is no longer pending and returns its state
        (``resolved``, ``expired`` or ``cancelled``: this does not raise for those).
        Raises :class:`WaitTimeout` when ``timeout`` seconds pass first (``None``: wait
        as long as it takes; the bridge always ends a request at its deadline).
        Connection errors and 502/503/504 are retried with backoff, ``max_retries``
        times in a row."""
        deadline = None if timeout is None else time.monotonic() + timeout
        last: RequestState | None = None
        failures = 0
        while True:
            remaining = _remaining(deadline)
            if remaining is not None and remaining <= 0:
                raise WaitTimeout(approval_key, float(timeout or 0), last)
            wait = _next_wait(remaining)
            started = time.monotonic()
            try:
                state = self.get(approval_key, wait=wait or None)
            except (httpx.TransportError, HitlApiError) as e:
                failures += 1
                if not self._cfg.retryable(e, failures):
                    raise
                self._sleep(self._cfg.backoff(failures), deadline)
                continue
            failures = 0
            last = state
            if not state.is_pending:
                return state
            # Still pending sooner than asked (a short wait, or a server that does not
            # hold the poll): do not spin.
            elapsed = time.monotonic() - started
            if elapsed < max(wait, self._cfg.poll_interval):
                self._sleep(self._cfg.poll_interval - elapsed if wait else self._cfg.poll_interval, deadline)

    @staticmethod
    def _sleep(seconds: float, deadline: float | None) -> None:
        remaining = _remaining(deadline)
        if remaining is not None:
            seconds = min(seconds, remaining)
        if seconds > 0:
            time.sleep(seconds)

    # -- high level --

    def request_approval(
        self,
        actions: Sequence[Action | Mapping[str, Any]],
        *,
        targets: Sequence[TargetLike],
        review_configs: Sequence[ReviewConfig | Mapping[str, Any]] | None = None,
        approvers: Sequence[str] | None = None,
        approver_roles: Sequence[str] | None = None,
        text: str | None = None,
        timeout_seconds: int | None = None,
        approval_key: str | None = None,
        session_id: str | None = None,
        callback_url: str | None = None,
        policy: Policy | Mapping[str, Any] | None = None,
        wait_timeout: float | None = None,
    ) -> Approval:
        """Asks the people of ``targets`` to approve, edit or reject tool calls, and
        waits for their decisions (one per action, in order). ``policy`` is the
        request's own decision policy (:class:`Policy`: ``approvers``, ``quorum``,
        ``escalation`` with a ``fallback``, ...), validated by the bridge; a fallback
        ends the request at its moment, so a ``reject`` fallback raises
        :class:`RequestExpired` with the fallback's decisions.

        Raises :class:`RequestExpired` (with the bridge's reject decisions) when nobody
        answers within ``timeout_seconds`` (bridge default 300), :class:`RequestCancelled`
        when the request is cancelled, :class:`WaitTimeout` when ``wait_timeout``
        (local, default unbounded) runs out first, :class:`HitlApiError` when the bridge
        refuses the request.
        """
        common = CommonFields(
            targets, approvers, approver_roles, text, timeout_seconds, approval_key, session_id, callback_url
        )
        state = self.create(approval_body(actions, common, review_configs, policy))
        if state.is_pending:
            state = self.wait(state.approval_key, timeout=wait_timeout)
        return _approval(state)

    def ask(
        self,
        questions: Sequence[Question | Mapping[str, Any]] | None = None,
        *,
        question: str | None = None,
        choices: Sequence[str] | None = None,
        allow_freeform: bool = True,
        targets: Sequence[TargetLike],
        approvers: Sequence[str] | None = None,
        approver_roles: Sequence[str] | None = None,
        text: str | None = None,
        timeout_seconds: int | None = None,
        approval_key: str | None = None,
        session_id: str | None = None,
        callback_url: str | None = None,
        wait_timeout: float | None = None,
    ) -> Answers:
        """Asks structured ``questions`` (``[{question, header?, multiSelect?,
        options: [{label, description?, input?}]}]``), or one ``question`` with string
        ``choices`` (typed text allowed unless ``allow_freeform=False``), and waits for
        the answers.

        Raises :class:`RequestExpired`, :class:`RequestCancelled`, :class:`WaitTimeout`
        or :class:`HitlApiError` as :meth:`request_approval` does.
        """
        common = CommonFields(
            targets, approvers, approver_roles, text, timeout_seconds, approval_key, session_id, callback_url
        )
        state = self.create(_ask_body(questions, question, choices, allow_freeform, common))
        if state.is_pending:
            state = self.wait(state.approval_key, timeout=wait_timeout)
        return _answers(state)


class AsyncHitlClient:
    """The asyncio (or trio, through anyio) twin of :class:`HitlClient`: the same
    methods, awaited::

        async with AsyncHitlClient(token="demo-token") as hitl:
            answers = await hitl.ask(question="Which region?", choices=["eu", "us"],
                                     targets=[Target.console()])
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        poll_interval: float = 0.5,
        max_retries: int = 5,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._cfg = _Config(base_url, token, timeout, poll_interval, max_retries, headers)
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(transport=transport, timeout=self._cfg.timeout)

    @property
    def base_url(self) -> str:
        return self._cfg.base_url

    # -- lifecycle --

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncHitlClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- low level --

    async def _send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        timeout: httpx.Timeout | None = None,
    ) -> httpx.Response:
        return await self._http.request(
            method,
            self._cfg.url(path),
            json=json,
            params=params,
            headers=self._cfg.headers,
            timeout=timeout or self._cfg.timeout,
        )

    async def health(self) -> bool:
        """Whether ``GET /healthz`` answers 200."""
        try:
            return (await self._send("GET", "/healthz")).status_code == 200
        except httpx.TransportError:
            return False

    async def create(self, body: Mapping[str, Any]) -> RequestState:
        """See :meth:`HitlClient.create`."""
        return self._cfg.state(await self._send("POST", "/v1/requests", json=dict(body)))

    async def get(self, approval_key: str, wait: float | None = None) -> RequestState:
        """See :meth:`HitlClient.get`."""
        params = self._cfg.wait_param(wait)
        response = await self._send(
            "GET",
            self._cfg.request_path(approval_key),
            params=params,
            timeout=self._cfg.read_timeout(params.get("wait")),
        )
        return self._cfg.state(response)

    async def cancel(self, approval_key: str) -> RequestState:
        """See :meth:`HitlClient.cancel`."""
        return self._cfg.state(await self._send("DELETE", self._cfg.request_path(approval_key)))

    async def pending(self) -> list[RequestState]:
        """See :meth:`HitlClient.pending`."""
        found: list[RequestState] = []
        cursor: str | None = None
        while True:
            page, cursor = self._cfg.page(await self._send("GET", "/v1/requests", params=self._cfg.pending_params(cursor)))
            found.extend(page)
            if cursor is None:
                return found

    async def wait(self, approval_key: str, timeout: float | None = None) -> RequestState:
        """See :meth:`HitlClient.wait`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        last: RequestState | None = None
        failures = 0
        while True:
            remaining = _remaining(deadline)
            if remaining is not None and remaining <= 0:
                raise WaitTimeout(approval_key, float(timeout or 0), last)
            wait = _next_wait(remaining)
            started = time.monotonic()
            try:
                state = await self.get(approval_key, wait=wait or None)
            except (httpx.TransportError, HitlApiError) as e:
                failures += 1
                if not self._cfg.retryable(e, failures):
                    raise
                await self._sleep(self._cfg.backoff(failures), deadline)
                continue
            failures = 0
            last = state
            if not state.is_pending:
                return state
            elapsed = time.monotonic() - started
            if elapsed < max(wait, self._cfg.poll_interval):
                await self._sleep(self._cfg.poll_interval - elapsed if wait else self._cfg.poll_interval, deadline)

    @staticmethod
    async def _sleep(seconds: float, deadline: float | None) -> None:
        remaining = _remaining(deadline)
        if remaining is not None:
            seconds = min(seconds, remaining)
        if seconds > 0:
            await _async_sleep(seconds)

    # -- high level --

    async def request_approval(
        self,
        actions: Sequence[Action | Mapping[str, Any]],
        *,
        targets: Sequence[TargetLike],
        review_configs: Sequence[ReviewConfig | Mapping[str, Any]] | None = None,
        approvers: Sequence[str] | None = None,
        approver_roles: Sequence[str] | None = None,
        text: str | None = None,
        timeout_seconds: int | None = None,
        approval_key: str | None = None,
        session_id: str | None = None,
        callback_url: str | None = None,
        policy: Policy | Mapping[str, Any] | None = None,
        wait_timeout: float | None = None,
    ) -> Approval:
        """See :meth:`HitlClient.request_approval`."""
        common = CommonFields(
            targets, approvers, approver_roles, text, timeout_seconds, approval_key, session_id, callback_url
        )
        state = await self.create(approval_body(actions, common, review_configs, policy))
        if state.is_pending:
            state = await self.wait(state.approval_key, timeout=wait_timeout)
        return _approval(state)

    async def ask(
        self,
        questions: Sequence[Question | Mapping[str, Any]] | None = None,
        *,
        question: str | None = None,
        choices: Sequence[str] | None = None,
        allow_freeform: bool = True,
        targets: Sequence[TargetLike],
        approvers: Sequence[str] | None = None,
        approver_roles: Sequence[str] | None = None,
        text: str | None = None,
        timeout_seconds: int | None = None,
        approval_key: str | None = None,
        session_id: str | None = None,
        callback_url: str | None = None,
        wait_timeout: float | None = None,
    ) -> Answers:
        """See :meth:`HitlClient.ask`."""
        common = CommonFields(
            targets, approvers, approver_roles, text, timeout_seconds, approval_key, session_id, callback_url
        )
        state = await self.create(_ask_body(questions, question, choices, allow_freeform, common))
        if state.is_pending:
            state = await self.wait(state.approval_key, timeout=wait_timeout)
        return _answers(state)
