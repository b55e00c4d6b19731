"""Exceptions. Everything this package raises on purpose is a :class:`HitlError`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from .types import Decision, RequestState

__all__ = [
    "HitlApiError",
    "HitlError",
    "RequestCancelled",
    "RequestExpired",
    "WaitTimeout",
]


class HitlError(Exception):
    """Base class of this package's errors."""


class HitlApiError(HitlError):
    """The bridge answered with an error status (4xx or 5xx).

    ``code``, ``message`` and ``field`` come from the body
    ``{"error": {"code", "message", "field"}}``; ``field`` is the JSON path of the
    offending value for validation errors (e.g. ``questions[0].options``), else ``None``.
    When the body is not of that form (a proxy's error page, say), ``code`` is
    ``"http_<status>"`` and ``message`` the body's text. ``body`` is the parsed JSON
    body (or ``None``).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None = None,
        body: Any = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.body = body
        where = f" (field {field})" if field else ""
        super().__init__(f"HTTP {status} {code}: {message}{where}")

    @classmethod
    def from_response(cls, response: httpx.Response) -> HitlApiError:
        status = response.status_code
        try:
            body: Any = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
            body = None
        error = body.get("error") if isinstance(body, Mapping) else None
        if isinstance(error, Mapping):
            field = error.get("field")
            return cls(
                status,
                str(error.get("code") or f"http_{status}"),
                str(error.get("message") or response.reason_phrase or ""),
                None if field is None else str(field),
                body,
            )
        text = response.text.strip() if body is None else json.dumps(body)
        return cls(status, f"http_{status}", text[:500] or response.reason_phrase or "", None, body)


class WaitTimeout(HitlError):
    """The local wait ran out while the request was still pending. The request is
    left as it is on the bridge: wait again, or :meth:`cancel` it."""

    def __init__(self, approval_key: str, timeout: float, state: RequestState | None = None) -> None:
        self.approval_key = approval_key
        self.timeout = timeout
        self.state = state
        super().__init__(f"request {approval_key} still pending after waiting {timeout:g} s")


class RequestExpired(HitlError):
    """Nobody answered in time. ``decisions`` holds, for an approval, the reject
    decisions the bridge applied (``timeouts.on_expiry = "reject"``); it is empty for
    questions and when the bridge sends nothing on expiry."""

    def __init__(self, state: RequestState) -> None:
        self.state = state
        self.approval_key = state.approval_key
        self.decisions: list[Decision] = state.decisions
        super().__init__(f"request {state.approval_key} expired without a human decision")


class RequestCancelled(HitlError):
    """The request was cancelled (``DELETE /v1/requests/{key}``) before anyone answered."""

    def __init__(self, state: RequestState) -> None:
        self.state = state
        self.approval_key = state.approval_key
        super().__init__(f"request {state.approval_key} was cancelled")
