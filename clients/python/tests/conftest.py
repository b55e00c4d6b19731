from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from bridge_process import BridgeProcess, StartupError, binary_path

from hitl_bridge_client import HitlApiError, HitlClient


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


@pytest.fixture(scope="session")
def bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BridgeProcess]:
    """The real bridge, once for the session. Skipped when the binary is missing
    (failed instead when CI=true: CI builds it first)."""
    binary = binary_path()
    if not binary.is_file():
        message = f"hitl-bridge binary not found at {binary} (build it with `cargo build`, or set HITL_BRIDGE_BIN)"
        if _in_ci():
            pytest.fail(message + "; CI=true, so this is a failure", pytrace=False)
        pytest.skip(message)
    process = BridgeProcess(binary, tmp_path_factory.mktemp("bridge"))
    failure: StartupError | None = None
    try:
        process.start()
    except StartupError as e:
        failure = e
    if failure is not None:
        if failure.predates_http_api and not _in_ci():
            pytest.skip(f"{binary} predates the HTTP API (it rejects the http.* settings): rebuild it")
        pytest.fail(str(failure), pytrace=False)
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def client(bridge: BridgeProcess) -> Iterator[HitlClient]:
    with HitlClient(bridge.base_url, bridge.token, poll_interval=0.1) as c:
        yield c
        # Leave nothing pending: the console answers one request at a time, in order.
        try:
            for state in c.pending():
                try:
                    c.cancel(state.approval_key)
                except HitlApiError:
                    pass
        except HitlApiError:
            pass
