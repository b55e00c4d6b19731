"""Checking the signature of the bridge's callbacks.

When a request has a ``callback_url``, the bridge POSTs the request's state there once
it leaves ``pending``, with::

    X-Hitl-Timestamp: <unix seconds>
    X-Hitl-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">

keyed with the secret of the API token the request was made with (the part after
``name:`` in ``http.api_tokens``, i.e. the bearer token the client sends).
"""

from __future__ import annotations

import hashlib
import hmac
import time

__all__ = ["SIGNATURE_HEADER", "TIMESTAMP_HEADER", "sign", "verify_signature"]

TIMESTAMP_HEADER = "X-Hitl-Timestamp"
SIGNATURE_HEADER = "X-Hitl-Signature"
_PREFIX = "sha256="


def _key(secret: str | bytes) -> bytes:
    return secret.encode("utf-8") if isinstance(secret, str) else secret


def sign(secret: str | bytes, timestamp: str | int, body: bytes) -> str:
    """The ``X-Hitl-Signature`` value for ``body`` sent at ``timestamp``:
    ``sha256=<hex>``. What the bridge computes; useful for tests of a receiver."""
    message = str(timestamp).encode("ascii") + b"." + body
    return _PREFIX + hmac.new(_key(secret), message, hashlib.sha256).hexdigest()


def verify_signature(
    secret: str | bytes,
    timestamp: str | int | None,
    body: bytes,
    signature_header: str | None,
    tolerance_seconds: float = 300,
    *,
    now: float | None = None,
) -> bool:
    """Whether a callback is genuine and fresh.

    ``timestamp`` and ``signature_header`` are the ``X-Hitl-Timestamp`` and
    ``X-Hitl-Signature`` header values as received; ``body`` is the raw request body,
    byte for byte (not re-serialized JSON). False when a header is missing or malformed,
    when the timestamp is further than ``tolerance_seconds`` from ``now`` (default: the
    current time; a non-positive tolerance turns the check off), or when the signature
    does not match. The comparison is constant-time.
    """
    if timestamp is None or signature_header is None:
        return False
    ts_text = str(timestamp).strip()
    if not ts_text.isascii() or not ts_text.isdigit():
        return False
    if tolerance_seconds > 0:
        current = time.time() if now is None else now
        if abs(current - int(ts_text)) > tolerance_seconds:
            return False
    header = signature_header.strip()
    if not header[: len(_PREFIX)].lower() == _PREFIX:
        return False
    given = header[len(_PREFIX) :].strip().lower()
    expected = sign(secret, ts_text, body)[len(_PREFIX) :]
    return hmac.compare_digest(given.encode("ascii", "replace"), expected.encode("ascii"))
