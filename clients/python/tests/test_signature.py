"""Callback signatures: HMAC-SHA256 over "<timestamp>.<body>", header "sha256=<hex>"."""

from __future__ import annotations

import hashlib
import hmac

from hitl_bridge_client import sign, verify_signature

SECRET = "ci-secret"
TS = "1767225600"
BODY = '{"approval_key":"deploy-42_1","status":"resolved","decided_by":{"name":"Thảo"}}'.encode()
NOW = 1767225600.0


def expected() -> str:
    digest = hmac.new(SECRET.encode(), TS.encode() + b"." + BODY, hashlib.sha256).hexdigest()
    return "sha256=" + digest


def test_known_vector() -> None:
    header = expected()
    assert sign(SECRET, TS, BODY) == header
    assert sign(SECRET.encode(), int(TS), BODY) == header
    assert verify_signature(SECRET, TS, BODY, header, now=NOW)
    assert verify_signature(SECRET.encode(), int(TS), BODY, header, now=NOW)


def test_a_fixed_vector_computed_once() -> None:
    # HMAC-SHA256(key="k", "1.{}") — pins the message layout ("<ts>.<body>").
    digest = hmac.new(b"k", b"1.{}", hashlib.sha256).hexdigest()
    assert sign("k", 1, b"{}") == "sha256=" + digest
    assert verify_signature("k", "1", b"{}", "sha256=" + digest, tolerance_seconds=0)


def test_header_spelling_is_tolerated() -> None:
    header = expected()
    assert verify_signature(SECRET, TS, BODY, "  SHA256=" + header[7:].upper() + " ", now=NOW)


def test_tampering_is_refused() -> None:
    header = expected()
    assert not verify_signature(SECRET, TS, BODY + b" ", header, now=NOW)
    assert not verify_signature("other-secret", TS, BODY, header, now=NOW)
    assert not verify_signature(SECRET, str(int(TS) + 1), BODY, header, now=NOW)
    assert not verify_signature(SECRET, TS, BODY, header[:-1] + ("0" if header[-1] != "0" else "1"), now=NOW)


def test_malformed_headers_are_refused() -> None:
    header = expected()
    assert not verify_signature(SECRET, TS, BODY, header[7:], now=NOW)  # no sha256= prefix
    assert not verify_signature(SECRET, TS, BODY, "sha1=" + header[7:], now=NOW)
    assert not verify_signature(SECRET, TS, BODY, None, now=NOW)
    assert not verify_signature(SECRET, None, BODY, header, now=NOW)
    assert not verify_signature(SECRET, "12.5", BODY, header, now=NOW)
    assert not verify_signature(SECRET, "", BODY, header, now=NOW)
    assert not verify_signature(SECRET, TS, BODY, "sha256=zz\u00e9", now=NOW)


def test_timestamp_tolerance() -> None:
    header = expected()
    assert verify_signature(SECRET, TS, BODY, header, now=NOW + 300)
    assert verify_signature(SECRET, TS, BODY, header, now=NOW - 300)
    assert not verify_signature(SECRET, TS, BODY, header, now=NOW + 301)
    assert not verify_signature(SECRET, TS, BODY, header, now=NOW - 301)
    assert verify_signature(SECRET, TS, BODY, header, tolerance_seconds=1000, now=NOW + 900)
    # A stale but genuine callback passes when the check is turned off.
    assert verify_signature(SECRET, TS, BODY, header, tolerance_seconds=0, now=NOW + 10**6)


def test_current_time_is_the_default() -> None:
    import time

    ts = str(int(time.time()))
    assert verify_signature(SECRET, ts, BODY, sign(SECRET, ts, BODY))
    old = "1000000000"  # 2001
    assert not verify_signature(SECRET, old, BODY, sign(SECRET, old, BODY))
