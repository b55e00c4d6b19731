"""The real hitl-bridge binary for the integration tests: started with the console
enabled, its stdout read line by line in a background thread, its stdin used to answer
the requests it shows (one line per answer, as a person at the terminal would)."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx

REPO = Path(__file__).resolve().parents[3]
TOKEN = "ci-secret"
CONSOLE_NAME = "CI"


def binary_path() -> Path:
    configured = os.environ.get("HITL_BRIDGE_BIN")
    return Path(configured).resolve() if configured else REPO / "target" / "debug" / "hitl-bridge"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class StartupError(Exception):
    def __init__(self, message: str, stderr: str) -> None:
        super().__init__(message)
        self.stderr = stderr

    @property
    def predates_http_api(self) -> bool:
        """The binary was built before `http.*` settings existed."""
        return "unknown field" in self.stderr and "http" in self.stderr


class Console:
    """The bridge's terminal: lines it printed, and a way to type an answer."""

    def __init__(self, stdout: IO[str], stdin: IO[str]) -> None:
        self._stdin = stdin
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.history: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, args=(stdout,), name="bridge-stdout", daemon=True)
        self._reader.start()

    def _read(self, stdout: IO[str]) -> None:
        for line in iter(stdout.readline, ""):
            line = line.rstrip("\n")
            self.history.append(line)
            self._lines.put(line)
        self._lines.put(None)  # end of output

    def expect(self, pattern: str, timeout: float = 15.0) -> str:
        """The next printed line matching ``pattern`` (a regex searched in the line);
        lines before it are passed over."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"the console printed no line matching {pattern!r} in {timeout} s; last lines:\n" + self.tail()
                )
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                self._lines.put(None)
                raise AssertionError(f"the bridge's output ended before a line matching {pattern!r}:\n" + self.tail())
            if regex.search(line):
                return line

    def send(self, line: str) -> None:
        with self._lock:
            self._stdin.write(line + "\n")
            self._stdin.flush()

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.history[-n:])

    @contextmanager
    def answering(self, *steps: tuple[str, str | None], timeout: float = 20.0) -> Iterator[None]:
        """In a background thread, for each ``(pattern, line)``: wait for a printed line
        matching ``pattern``, then type ``line`` (``None``: type nothing). Joined (and
        its failure re-raised) when the block ends."""
        errors: list[BaseException] = []

        def run() -> None:
            try:
                for pattern, line in steps:
                    self.expect(pattern, timeout)
                    if line is not None:
                        self.send(line)
            except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
                errors.append(e)

        thread = threading.Thread(target=run, name="console-answer", daemon=True)
        thread.start()
        try:
            yield
        finally:
            thread.join(timeout + 5)
        if errors:
            raise errors[0]

    def in_background(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        """Runs ``fn`` in a thread; the returned callable joins it and returns its result
        (or raises its exception)."""
        result: list[Any] = []
        errors: list[BaseException] = []

        def run() -> None:
            try:
                result.append(fn())
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()

        def join() -> Any:
            thread.join(30)
            if errors:
                raise errors[0]
            return result[0] if result else None

        return join


class BridgeProcess:
    """``hitl-bridge run`` with the console on and the HTTP API on a free port."""

    def __init__(self, binary: Path, workdir: Path, extra_env: dict[str, str] | None = None) -> None:
        self.binary = binary
        self.workdir = workdir
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.token = TOKEN
        self.stderr_path = workdir / "bridge.stderr.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_BRIDGE__")}
        env.update(
            {
                "HITL_BRIDGE__STORE__URL": f"sqlite://{workdir / 'bridge.db'}",
                "HITL_BRIDGE__CONSOLE__ENABLED": "true",
                "HITL_BRIDGE__CONSOLE__USER_NAME": CONSOLE_NAME,
                "HITL_BRIDGE__HTTP__LISTEN": f"127.0.0.1:{self.port}",
                "HITL_BRIDGE__HTTP__API_TOKENS": f"ci:{TOKEN}",
                # The test's callback receiver listens on loopback.
                "HITL_BRIDGE__HTTP__CALLBACK_ALLOW_PRIVATE": "true",
                "HITL_BRIDGE__TIMEOUTS__GRACE_SECS": "0",
                # No agent backend in these tests: point the WebSocket at a closed port.
                "HITL_BRIDGE__BACKEND__URL": f"ws://127.0.0.1:{free_port()}/ws/{{session_id}}",
                "RUST_LOG": "warn",
            }
        )
        env.update(extra_env or {})
        self.env = env
        self.process: subprocess.Popen[str] | None = None
        self.console: Console | None = None
        self._stderr: IO[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [str(self.binary), "run", "--config", str(REPO / "config" / "default.toml")],
            cwd=self.workdir,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        self.console = Console(self.process.stdout, self.process.stdin)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                stderr = self.stderr()
                raise StartupError(f"hitl-bridge exited with {self.process.returncode} at start-up:\n{stderr}", stderr)
            try:
                if httpx.get(self.base_url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        stderr = self.stderr()
        self.stop()
        raise StartupError(f"GET /healthz did not answer 200 within {timeout} s:\n{stderr}", stderr)

    def stderr(self, limit: int = 3000) -> str:
        """The start of what the bridge wrote on stderr (errors come first; a backtrace
        may follow)."""
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""
        return text if len(text) <= limit else text[:limit] + "\n[…]"

    def stop(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        if process is not None:
            for stream in (process.stdin, process.stdout):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
