#!/usr/bin/env python3
"""Checks the deployment files against the bridge they deploy.

Run by deploy/check.sh, which provides the tools: Helm's own engine (the Go Helm SDK
through the helm-python-sdk wheel) for `helm lint` and `helm template`, promtool from
Debian's prometheus package, PyYAML, and the hitl-bridge binary (its `check-config`
is the judge of every setting a file passes to the bridge). This script only reads the
repository and writes to a temporary directory; it never starts a container or a
cluster.

Each check prints `ok` or `FAIL` with the reason; the last line is
`deploy: N passed, M failed` and the exit status is 1 when anything failed.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import helm_python as helm
import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
CHART = DEPLOY / "helm" / "hitl-bridge"
DEFAULT_TOML = ROOT / "config" / "default.toml"
ALERTS = CHART / "files" / "alerts.yml"
DASHBOARD = DEPLOY / "grafana" / "hitl-bridge.json"
OPERATIONS = ROOT / "docs" / "operations.md"

# The metric families the bridge exports on /metrics (src/metrics.rs).
METRIC_FAMILIES = [
    "hitl_bridge_interactions_pending",
    "hitl_bridge_interactions_total",
    "hitl_bridge_decision_seconds",
    "hitl_bridge_outbox_depth",
    "hitl_bridge_backend_sessions_connected",
    "hitl_bridge_platform_errors_total",
    "hitl_bridge_refusals_total",
]

# The bridge's HTTP listener and the paths the probes must hit (src/server.rs).
HTTP_PORT = 8790
LIVENESS_PATH = "/healthz"
READINESS_PATH = "/readyz"
IMAGE_UID = 10001  # Dockerfile: useradd --uid 10001

# Where the platforms' HTTP endpoints are served, read from the code that serves them.
TEAMS_ENDPOINT = ROOT / "src" / "platform" / "teams" / "http_endpoint.rs"
MATTERMOST_PATHS = ROOT / "src" / "platform" / "mattermost" / "setup.rs"

# Teams, Mattermost and Matrix on one replica (Matrix keeps its device on the volume,
# so one replica with persistence): their secrets, ports, Ingress paths, and the
# settings each platform's check requires (src/platform/*/settings.rs).
PLATFORM_VALUES = {
    "persistence": {"enabled": True},
    "secrets": {
        "teamsAppPassword": "teams-client-secret",
        "mattermostBotToken": "xi4ec1tsxpgztr8ejmxy1rbnew",
        "mattermostSlashToken": "slash-command-token",
        "matrixAccessToken": "syt_matrix_token",
        "matrixStorePassphrase": "matrix-store-passphrase",
    },
    "env": {
        "HITL_BRIDGE__BACKEND__URL": "ws://agent:8787/ws/{session_id}",
        "HITL_BRIDGE__TEAMS__ENABLED": "true",
        "HITL_BRIDGE__TEAMS__APP_ID": "00000000-0000-0000-0000-000000000001",
        "HITL_BRIDGE__MATTERMOST__ENABLED": "true",
        "HITL_BRIDGE__MATTERMOST__URL": "https://chat.example.com",
        "HITL_BRIDGE__MATTERMOST__TEAM": "ops",
        "HITL_BRIDGE__MATTERMOST__PUBLIC_URL": "https://bridge.example.com",
        "HITL_BRIDGE__MATRIX__ENABLED": "true",
        "HITL_BRIDGE__MATRIX__HOMESERVER_URL": "https://matrix.example.org",
        "HITL_BRIDGE__MATRIX__USER_ID": "@hitl:example.org",
    },
    "teamsMessages": {"enabled": True},
    "mattermostActions": {"enabled": True},
    "ingress": {"enabled": True},
}

# Settings the docs describe that come with a branch merged alongside this one; they
# are reported as skipped until config/default.toml has them, then checked like the rest.
PENDING_KEYS: set = set()

# The values the chart is rendered with besides its defaults: what a production
# install with two replicas on PostgreSQL and Prometheus Operator looks like.
SCALED_VALUES = {
    "replicaCount": 2,
    "secrets": {
        "storeUrl": "postgres://hitl:pw@postgres.ops.svc:5432/hitl",
        "telegramToken": "123456789:test-token",
        "telegramWebhookSecret": "webhook-secret",
        "tokensSecret": "button-secret",
        "apiTokens": "ci:api-secret",
    },
    "env": {
        "HITL_BRIDGE__BACKEND__URL": "ws://agent:8787/ws/{session_id}",
        "HITL_BRIDGE__TELEGRAM__ENABLED": "true",
        "HITL_BRIDGE__TELEGRAM__MODE": "webhook",
        "HITL_BRIDGE__TELEGRAM__WEBHOOK_URL": "https://bridge.example.com/telegram/webhook",
        "HITL_BRIDGE__ACCESS__USERS": "telegram:123456",
    },
    "telegramWebhook": {"enabled": True},
    "ingress": {"enabled": True},
    "serviceMonitor": {"enabled": True},
    "prometheusRule": {"enabled": True},
}


class Report:
    """Counts and prints the outcome of each check."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        self.skipped = 0

    def check(self, name: str, problems: list[str]) -> None:
        if problems:
            self.failed += 1
            print(f"FAIL {name}")
            for p in problems:
                print(f"     {p}")
        else:
            self.passed += 1
            print(f"ok   {name}")

    def skip(self, name: str, why: str) -> None:
        self.skipped += 1
        print(f"skip {name}: {why}")

    def summary(self) -> str:
        line = f"deploy: {self.passed} passed, {self.failed} failed"
        return line + (f", {self.skipped} skipped" if self.skipped else "")


# ---------------------------------------------------------------------------------------
# Helpers


def run(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)


def config_keys() -> set[tuple[str, str]]:
    """(section, key) of every setting config/default.toml documents, set or commented."""
    keys: set[tuple[str, str]] = set()
    section = None
    for line in DEFAULT_TOML.read_text().splitlines():
        header = re.match(r"^\[([a-z_]+)\]", line)
        if header:
            section = header.group(1)
            continue
        key = re.match(r"^#?\s*([a-z_]+)\s*=", line)
        if key and section:
            keys.add((section, key.group(1)))
    return keys


def env_key(name: str) -> tuple[str, str] | None:
    m = re.fullmatch(r"HITL_BRIDGE__([A-Z_]+?)__([A-Z_]+)", name)
    return (m.group(1).lower(), m.group(2).lower()) if m else None


def check_config(binary: Path, env: dict[str, str], config: Path | None, cwd: Path) -> tuple[int, str, str]:
    """`hitl-bridge check-config` with only `env` (plus PATH) in its environment."""
    clean = {"PATH": os.environ.get("PATH", ""), "RUST_BACKTRACE": "0", **env}
    cmd = [str(binary), "check-config"] + (["--config", str(config)] if config else [])
    p = run(cmd, env=clean, cwd=cwd)
    return p.returncode, p.stdout, p.stderr.strip().splitlines()[0] if p.stderr.strip() else ""


def render(chart: Path, values: dict | None = None) -> dict[str, list[dict]]:
    """`helm template`: the chart's documents by kind."""
    with helm.Chart.load(str(chart)) as c:
        manifests = c.render(values or {}, name="hb", namespace="ops")
    by_kind: dict[str, list[dict]] = {}
    for text in manifests.values():
        for doc in yaml.safe_load_all(text):
            if doc:
                by_kind.setdefault(doc["kind"], []).append(doc)
    return by_kind


def only(docs: dict[str, list[dict]], kind: str) -> dict:
    found = docs.get(kind, [])
    if len(found) != 1:
        raise AssertionError(f"expected one {kind}, rendered {len(found)}")
    return found[0]


# ---------------------------------------------------------------------------------------
# The Helm chart


def probe_problems(docs: dict[str, list[dict]]) -> list[str]:
    """What is wrong with the Deployment's probes, ports and user."""
    problems = []
    pod = only(docs, "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    if ports.get("http") != HTTP_PORT:
        problems.append(f"container port `http` is {ports.get('http')}, the bridge listens on {HTTP_PORT}")
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    if env.get("HITL_BRIDGE__HTTP__LISTEN") != f"0.0.0.0:{HTTP_PORT}":
        problems.append(f"HITL_BRIDGE__HTTP__LISTEN is {env.get('HITL_BRIDGE__HTTP__LISTEN')!r}")
    expected = {
        "startupProbe": LIVENESS_PATH,
        "livenessProbe": LIVENESS_PATH,
        "readinessProbe": READINESS_PATH,
    }
    for probe, path in expected.items():
        get = (container.get(probe) or {}).get("httpGet") or {}
        if get.get("path") != path:
            problems.append(f"{probe} path is {get.get('path')!r}, expected {path!r}")
        if get.get("port") not in ("http", HTTP_PORT):
            problems.append(f"{probe} port is {get.get('port')!r}, expected the http port")
    security = pod.get("securityContext", {})
    if security.get("runAsUser") != IMAGE_UID or security.get("runAsNonRoot") is not True:
        problems.append(f"pod securityContext {security} does not run as uid {IMAGE_UID}, non-root")
    if container.get("securityContext", {}).get("allowPrivilegeEscalation") is not False:
        problems.append("allowPrivilegeEscalation is not false")
    if container.get("args") != ["run", "--config", "/etc/hitl-bridge/config.toml"]:
        problems.append(f"args are {container.get('args')}")
    mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
    if mounts.get("/etc/hitl-bridge") != "config" or "/app/data" not in mounts:
        problems.append(f"volume mounts {mounts} miss the config or /app/data")
    return problems


def chart_checks(report: Report, binary: Path, tmp: Path) -> None:
    copy_text = (CHART / "files" / "default.toml").read_text()
    report.check(
        "chart: files/default.toml is a copy of config/default.toml",
        [] if copy_text == DEFAULT_TOML.read_text()
        else ["they differ: cp config/default.toml deploy/helm/hitl-bridge/files/default.toml"],
    )

    for label, values in (("default values", None), ("two replicas, PostgreSQL, monitoring", SCALED_VALUES)):
        result = helm.lint(str(CHART), values, strict=True)
        bad = [f"{m['path']}: {m['error']}" for m in result["messages"] if m["severity"] >= 2] + result["errors"]
        report.check(f"chart: helm lint --strict ({label})", bad)

    docs = render(CHART)
    report.check("chart: probes, ports, user (default values)", probe_problems(docs))

    problems = []
    config = only(docs, "ConfigMap")["data"]["config.toml"]
    if config.strip() != DEFAULT_TOML.read_text().strip():
        problems.append("ConfigMap config.toml is not config/default.toml")
    secret = only(docs, "Secret")
    if secret.get("stringData"):
        problems.append(f"empty secrets rendered keys: {sorted(secret['stringData'])}")
    for kind in ("ServiceMonitor", "PrometheusRule", "Ingress", "PersistentVolumeClaim"):
        if kind in docs:
            problems.append(f"{kind} rendered although it is off by default")
    deployment = only(docs, "Deployment")
    if deployment["spec"]["replicas"] != 1:
        problems.append(f"default replicas {deployment['spec']['replicas']}")
    report.check("chart: ConfigMap, Secret, optional resources (default values)", problems)

    # The bridge itself reads the rendered config file with the Deployment's env.
    config_file = tmp / "chart-config.toml"
    config_file.write_text(config)
    report.check(
        "chart: hitl-bridge check-config accepts the rendered config and env (default values)",
        config_problems(binary, deployment_env(docs, {}), config_file, tmp),
    )

    scaled = render(CHART, SCALED_VALUES)
    problems = probe_problems(scaled)
    deployment = only(scaled, "Deployment")
    if deployment["spec"]["replicas"] != 2:
        problems.append(f"replicas {deployment['spec']['replicas']}, expected 2")
    secret = only(scaled, "Secret")
    expected_secret = {
        "HITL_BRIDGE__STORE__URL": SCALED_VALUES["secrets"]["storeUrl"],
        "HITL_BRIDGE__TELEGRAM__TOKEN": SCALED_VALUES["secrets"]["telegramToken"],
        "HITL_BRIDGE__TELEGRAM__WEBHOOK_SECRET": SCALED_VALUES["secrets"]["telegramWebhookSecret"],
        "HITL_BRIDGE__TOKENS__SECRET": SCALED_VALUES["secrets"]["tokensSecret"],
        "HITL_BRIDGE__HTTP__API_TOKENS": SCALED_VALUES["secrets"]["apiTokens"],
    }
    if secret.get("stringData") != expected_secret:
        problems.append(f"Secret stringData {secret.get('stringData')} != {expected_secret}")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    if container.get("envFrom") != [{"secretRef": {"name": secret["metadata"]["name"]}}]:
        problems.append(f"envFrom {container.get('envFrom')} does not load the Secret")
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    env = {e["name"]: e.get("value") for e in container["env"]}
    if ports.get("tg-webhook") != 8443 or env.get("HITL_BRIDGE__TELEGRAM__WEBHOOK_LISTEN") != "0.0.0.0:8443":
        problems.append(f"webhook port {ports.get('tg-webhook')} / listen {env.get('HITL_BRIDGE__TELEGRAM__WEBHOOK_LISTEN')}")
    service = only(scaled, "Service")
    service_ports = {p["name"]: p["port"] for p in service["spec"]["ports"]}
    if service_ports != {"http": HTTP_PORT, "tg-webhook": 8443}:
        problems.append(f"Service ports {service_ports}")
    monitor = only(scaled, "ServiceMonitor")
    if monitor["spec"]["endpoints"] != [
        {"port": "http", "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s"}
    ]:
        problems.append(f"ServiceMonitor endpoints {monitor['spec']['endpoints']}")
    selector = monitor["spec"]["selector"]["matchLabels"]
    if any(service["metadata"]["labels"].get(k) != v for k, v in selector.items()):
        problems.append(f"ServiceMonitor selector {selector} does not match the Service's labels")
    job_label = monitor["spec"].get("jobLabel")
    if service["metadata"]["labels"].get(job_label) != "hitl-bridge":
        problems.append(f"jobLabel {job_label!r} does not give job=\"hitl-bridge\" (the alert rules' job)")
    rule = only(scaled, "PrometheusRule")
    if rule["spec"] != yaml.safe_load(ALERTS.read_text()):
        problems.append("PrometheusRule spec is not files/alerts.yml")
    ingress = only(scaled, "Ingress")
    paths = ingress["spec"]["rules"][0]["http"]["paths"]
    webhook_path = urlpath(SCALED_VALUES["env"]["HITL_BRIDGE__TELEGRAM__WEBHOOK_URL"])
    if [(p["path"], p["backend"]["service"]["port"]["name"]) for p in paths] != [(webhook_path, "tg-webhook")]:
        problems.append(f"Ingress paths {paths} do not route {webhook_path} to the webhook port only")
    report.check("chart: two replicas, Secret keys, ServiceMonitor, PrometheusRule, Ingress", problems)

    config_file = tmp / "chart-scaled.toml"
    config_file.write_text(only(scaled, "ConfigMap")["data"]["config.toml"])
    report.check(
        "chart: hitl-bridge check-config accepts the rendered config, env and Secret (two replicas)",
        config_problems(binary, deployment_env(scaled, secret["stringData"]), config_file, tmp),
    )

    # Slack on two replicas: HTTP mode, its secrets, its events port and ingress path.
    slack_values = copy.deepcopy(SCALED_VALUES)
    slack_values["secrets"].update({"slackBotToken": "xoxb-1-test", "slackSigningSecret": "slack-signing-secret"})
    slack_values["env"].update({"HITL_BRIDGE__SLACK__ENABLED": "true", "HITL_BRIDGE__SLACK__MODE": "http"})
    slack_values["slackEvents"] = {"enabled": True}
    slack = render(CHART, slack_values)
    problems = []
    slack_secret = only(slack, "Secret")["stringData"]
    for key, value in [("HITL_BRIDGE__SLACK__BOT_TOKEN", "xoxb-1-test"), ("HITL_BRIDGE__SLACK__SIGNING_SECRET", "slack-signing-secret")]:
        if slack_secret.get(key) != value:
            problems.append(f"Secret {key} is {slack_secret.get(key)!r}")
    if "HITL_BRIDGE__SLACK__APP_TOKEN" in slack_secret:
        problems.append("an empty slackAppToken rendered a key")
    (slack_container,) = only(slack, "Deployment")["spec"]["template"]["spec"]["containers"]
    slack_ports = {p["name"]: p["containerPort"] for p in slack_container["ports"]}
    slack_env = {e["name"]: e.get("value") for e in slack_container["env"]}
    if slack_ports.get("slack") != 3000 or slack_env.get("HITL_BRIDGE__SLACK__EVENTS_LISTEN") != "0.0.0.0:3000":
        problems.append(f"Slack port {slack_ports.get('slack')} / listen {slack_env.get('HITL_BRIDGE__SLACK__EVENTS_LISTEN')}")
    slack_service = {p["name"]: p["port"] for p in only(slack, "Service")["spec"]["ports"]}
    if slack_service.get("slack") != 3000:
        problems.append(f"Service ports {slack_service}")
    slack_paths = [(p["path"], p["backend"]["service"]["port"]["name"]) for p in only(slack, "Ingress")["spec"]["rules"][0]["http"]["paths"]]
    if ("/slack/events", "slack") not in slack_paths:
        problems.append(f"Ingress paths {slack_paths} do not route /slack/events to the Slack port")
    slack_config = tmp / "chart-slack.toml"
    slack_config.write_text(only(slack, "ConfigMap")["data"]["config.toml"])
    problems += config_problems(binary, deployment_env(slack, slack_secret), slack_config, tmp)
    report.check("chart: Slack's HTTP mode on two replicas (Secret keys, events port, Ingress path, check-config)", problems)

    platform_checks(report, binary, tmp)

    problems = []
    polling = copy.deepcopy(SCALED_VALUES)
    del polling["env"]["HITL_BRIDGE__TELEGRAM__MODE"]
    matrix_scaled = copy.deepcopy(SCALED_VALUES)
    matrix_scaled["env"].update({k: v for k, v in PLATFORM_VALUES["env"].items() if "MATRIX" in k})
    for label, values, reason in (
        ("SQLite", {"replicaCount": 2}, "needs a PostgreSQL store"),
        ("a SQLite url", {"replicaCount": 2, "secrets": {"storeUrl": "sqlite://data/x.db"}}, "needs a PostgreSQL store"),
        ("Telegram polling", polling, "one poller per bot token"),
        ("Matrix", matrix_scaled, "a Matrix device of its own"),
    ):
        try:
            render(CHART, values)
            problems.append(f"replicaCount 2 with {label} rendered; it must fail")
        except Exception as e:  # the SDK raises HelmRenderError with the template's message
            if reason not in str(e):
                problems.append(f"replicaCount 2 with {label} failed for another reason: {e}")
    report.check("chart: refuses several replicas on SQLite, with Telegram polling or with Matrix", problems)

    # The probe check above must catch a wrong path: break a copy of the chart.
    broken = tmp / "broken-chart"
    shutil.copytree(CHART, broken)
    deployment_file = broken / "templates" / "deployment.yaml"
    deployment_file.write_text(deployment_file.read_text().replace(f"path: {READINESS_PATH}", "path: /ready"))
    found = probe_problems(render(broken))
    report.check(
        "chart: a wrong readiness path is caught",
        [] if any("readinessProbe path is '/ready'" in p for p in found) else [f"not caught: {found}"],
    )


def code_const(path: Path, name: str) -> str:
    """The value of `pub const NAME: &str = "…";` in a source file."""
    m = re.search(rf'const {name}: &str = "([^"]+)";', path.read_text())
    if not m:
        raise AssertionError(f"no const {name} in {path.relative_to(ROOT)}")
    return m.group(1)


def prefix_routes(prefix: str, path: str) -> bool:
    """Whether an Ingress `pathType: Prefix` of `prefix` routes `path` (Kubernetes
    matches whole path elements; a trailing `/` is ignored)."""
    want = [e for e in prefix.split("/") if e]
    return [e for e in path.split("/") if e][: len(want)] == want


def platform_checks(report: Report, binary: Path, tmp: Path) -> None:
    """Teams, Mattermost and Matrix: what the chart renders for them."""
    values = PLATFORM_VALUES
    result = helm.lint(str(CHART), values, strict=True)
    bad = [f"{m['path']}: {m['error']}" for m in result["messages"] if m["severity"] >= 2] + result["errors"]
    report.check("chart: helm lint --strict (Teams, Mattermost, Matrix)", bad)

    docs = render(CHART, values)
    problems = probe_problems(docs)
    secret = only(docs, "Secret").get("stringData") or {}
    expected_secret = {
        "HITL_BRIDGE__TEAMS__APP_PASSWORD": values["secrets"]["teamsAppPassword"],
        "HITL_BRIDGE__MATTERMOST__BOT_TOKEN": values["secrets"]["mattermostBotToken"],
        "HITL_BRIDGE__MATTERMOST__SLASH_TOKEN": values["secrets"]["mattermostSlashToken"],
        "HITL_BRIDGE__MATRIX__ACCESS_TOKEN": values["secrets"]["matrixAccessToken"],
        "HITL_BRIDGE__MATRIX__STORE_PASSPHRASE": values["secrets"]["matrixStorePassphrase"],
    }
    if secret != expected_secret:
        problems.append(f"Secret stringData {secret} != {expected_secret} (an empty matrixPassword renders no key)")
    for name in expected_secret:
        if env_key(name) not in config_keys():
            problems.append(f"Secret key {name} names no key of config/default.toml")
    (container,) = only(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    env_list = [e["name"] for e in container["env"]]
    env = {e["name"]: e.get("value") for e in container["env"]}
    if ports != {"http": HTTP_PORT, "teams": 3978, "mattermost": 3002}:
        problems.append(f"container ports {ports}")
    if any(len(name) > 15 for name in ports):
        problems.append(f"a port name is longer than 15 characters: {sorted(ports)}")
    for name, value in [
        ("HITL_BRIDGE__TEAMS__MESSAGES_LISTEN", "0.0.0.0:3978"),
        ("HITL_BRIDGE__MATTERMOST__LISTEN", "0.0.0.0:3002"),
        ("HITL_BRIDGE__MATRIX__STORE_PATH", "/app/data/matrix-store"),
    ]:
        if env.get(name) != value:
            problems.append(f"{name} is {env.get(name)!r}, expected {value!r}")
    if len(env_list) != len(set(env_list)):
        problems.append(f"duplicate env names: {env_list}")
    mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in only(docs, "Deployment")["spec"]["template"]["spec"]["volumes"]}
    if not env.get("HITL_BRIDGE__MATRIX__STORE_PATH", "").startswith(mounts.get("data", "?") + "/") \
            or "persistentVolumeClaim" not in volumes.get("data", {}):
        problems.append(f"matrix.store_path {env.get('HITL_BRIDGE__MATRIX__STORE_PATH')!r} is not on the persistent volume {mounts.get('data')}")
    service = {p["name"]: (p["port"], p["targetPort"]) for p in only(docs, "Service")["spec"]["ports"]}
    if service != {"http": (HTTP_PORT, "http"), "teams": (3978, "teams"), "mattermost": (3002, "mattermost")}:
        problems.append(f"Service ports {service}")
    paths = [(p["path"], p["pathType"], p["backend"]["service"]["port"]["name"])
             for p in only(docs, "Ingress")["spec"]["rules"][0]["http"]["paths"]]
    teams_path = code_const(TEAMS_ENDPOINT, "MESSAGES_PATH")
    if (teams_path, "Exact", "teams") not in paths:
        problems.append(f"Ingress paths {paths} do not route {teams_path} to the Teams port")
    mattermost_routes = [(path, kind) for path, kind, port in paths if port == "mattermost"]
    for const in ("ACTIONS_PATH", "DIALOGS_PATH", "COMMAND_PATH"):
        served = code_const(MATTERMOST_PATHS, const)
        if not any(path == served if kind == "Exact" else prefix_routes(path, served) for path, kind in mattermost_routes):
            problems.append(f"Ingress paths {paths} do not route {served} ({const}) to the Mattermost port")
    if {port for _, _, port in paths} != {"teams", "mattermost"}:
        problems.append(f"Ingress routes to {sorted({port for _, _, port in paths})}, expected only teams and mattermost")
    config_file = tmp / "chart-platforms.toml"
    config_file.write_text(only(docs, "ConfigMap")["data"]["config.toml"])
    problems += config_problems(binary, deployment_env(docs, secret), config_file, tmp)
    report.check("chart: Teams, Mattermost and Matrix (Secret keys, ports, listens, store path, Ingress paths, check-config)", problems)

    problems = []
    # A store path given in env is the only one (no duplicate variable); off by default.
    own = copy.deepcopy(values)
    own["env"]["HITL_BRIDGE__MATRIX__STORE_PATH"] = "/app/data/my-matrix"
    (container,) = only(render(CHART, own), "Deployment")["spec"]["template"]["spec"]["containers"]
    found = [e.get("value") for e in container["env"] if e["name"] == "HITL_BRIDGE__MATRIX__STORE_PATH"]
    if found != ["/app/data/my-matrix"]:
        problems.append(f"with env.HITL_BRIDGE__MATRIX__STORE_PATH set, the Deployment sets it to {found}")
    default_docs = render(CHART)
    (container,) = only(default_docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    if {p["name"] for p in container["ports"]} != {"http"}:
        problems.append(f"default container ports {[p['name'] for p in container['ports']]}")
    if {p["name"] for p in only(default_docs, "Service")["spec"]["ports"]} != {"http"}:
        problems.append("the default Service opens more than http")
    # The Ingress refuses to render with nothing to expose, and names the new toggles.
    try:
        render(CHART, {"ingress": {"enabled": True}})
        problems.append("ingress.enabled with no platform endpoint rendered; it must fail")
    except Exception as e:
        for toggle in ("teamsMessages.enabled", "mattermostActions.enabled"):
            if toggle not in str(e):
                problems.append(f"the Ingress refusal does not name {toggle}: {e}")
    report.check("chart: Matrix store path from env is not doubled; new ports off by default; Ingress refusal names every toggle", problems)


def deployment_env(docs: dict[str, list[dict]], secret: dict[str, str]) -> dict[str, str]:
    (container,) = only(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container.get("env", [])}
    return {**env, **secret}


def config_problems(binary: Path, env: dict[str, str], config: Path | None, cwd: Path) -> list[str]:
    code, _, error = check_config(binary, env, config, cwd)
    return [] if code == 0 else [f"check-config exited {code}: {error}"]


def urlpath(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


# ---------------------------------------------------------------------------------------
# docker compose


def dotenv(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The set variables of an .env file, and the commented-out `# NAME=value` ones."""
    values, commented = {}, {}
    for line in path.read_text().splitlines():
        m = re.fullmatch(r"(#\s*)?([A-Z][A-Z0-9_]*)=(.*)", line.strip())
        if m:
            (commented if m.group(1) else values)[m.group(2)] = m.group(3)
    return values, commented


def interpolate(text: str, variables: dict[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default} (nested) and ${VAR:?error}; an unset required
    variable raises."""

    def expand(s: str) -> str:
        out, i = [], 0
        while i < len(s):
            if s.startswith("$$", i):
                out.append("$")
                i += 2
            elif s.startswith("${", i):
                depth, j = 1, i + 2
                while depth:
                    if s.startswith("${", j):
                        depth, j = depth + 1, j + 2
                    else:
                        depth -= s[j] == "}"
                        j += 1
                out.append(substitute(s[i + 2 : j - 1]))
                i = j
            else:
                out.append(s[i])
                i += 1
        return "".join(out)

    def substitute(expr: str) -> str:
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:-|:\?)(.*))?", expr, re.S)
        if not m:
            raise ValueError(f"unsupported interpolation ${{{expr}}}")
        name, op, arg = m.groups()
        value = variables.get(name, "")
        if value:
            return value
        if op == ":-":
            return expand(arg)
        if op == ":?":
            raise ValueError(f"{name} is required: {arg}")
        return ""

    return expand(text)


def compose_checks(report: Report, binary: Path, tmp: Path) -> None:
    raw = (DEPLOY / "docker-compose.yml").read_text()
    env_vars, commented = dotenv(DEPLOY / ".env.example")
    try:
        compose = yaml.safe_load(interpolate(raw, env_vars))
        problems = []
    except ValueError as e:
        report.check("compose: every required variable is in .env.example", [str(e)])
        return
    report.check("compose: every required variable is in .env.example", problems)

    services = compose["services"]
    problems = []
    expected = {"postgres", "agent", "bridge-1", "bridge-2", "caddy", "prometheus", "grafana"}
    if set(services) != expected:
        problems.append(f"services {sorted(services)} != {sorted(expected)}")
    for name in ("agent", "bridge-1", "bridge-2"):
        s = services[name]
        if s.get("image") != "hitl-bridge:local" or s.get("build", {}).get("context") != "..":
            problems.append(f"{name} is not built from the repository's Dockerfile as hitl-bridge:local")
        elif not (DEPLOY / s["build"]["context"] / s["build"]["dockerfile"]).is_file():
            problems.append(f"{name}: no {s['build']['dockerfile']} at the build context")
    if services["agent"].get("command") != ["agent-sim", "--listen", "0.0.0.0:8787"]:
        problems.append(f"agent command {services['agent'].get('command')}")
    if services["agent"]["healthcheck"]["test"] != ["CMD", "hitl-bridge", "health", "--url", "http://127.0.0.1:8787/health"]:
        problems.append(f"agent healthcheck {services['agent']['healthcheck']['test']}")
    for name in ("bridge-1", "bridge-2"):
        s = services[name]
        if s.get("healthcheck", {}).get("test") != ["CMD", "hitl-bridge", "health"]:
            problems.append(f"{name} healthcheck is not `hitl-bridge health`")
        if s.get("depends_on", {}).get("postgres", {}).get("condition") != "service_healthy":
            problems.append(f"{name} does not wait for a healthy postgres")
        env = s["environment"]
        if not env["HITL_BRIDGE__STORE__URL"].startswith("postgres://"):
            problems.append(f"{name} store is not PostgreSQL")
        if env.get("HITL_BRIDGE__TELEGRAM__MODE") != "webhook":
            problems.append(f"{name} is not in webhook mode")
        if env.get("HITL_BRIDGE__HTTP__LISTEN") != f"0.0.0.0:{HTTP_PORT}":
            problems.append(f"{name} http.listen {env.get('HITL_BRIDGE__HTTP__LISTEN')}")
    if services["bridge-1"]["environment"] != services["bridge-2"]["environment"]:
        problems.append("the two replicas have different settings")
    for name, s in services.items():
        for volume in s.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith(".") and not (DEPLOY / source).exists():
                problems.append(f"{name} mounts {source}, which does not exist")
    report.check("compose: services, image, healthchecks, PostgreSQL, webhook mode, mounts", problems)

    # Caddy must send the webhook path to the port the bridges serve it on, and only to
    # ready replicas.
    env = services["bridge-1"]["environment"]
    caddyfile = (DEPLOY / "caddy" / "Caddyfile").read_text()
    problems = []
    webhook_path = urlpath(env["HITL_BRIDGE__TELEGRAM__WEBHOOK_URL"])
    webhook_port = env["HITL_BRIDGE__TELEGRAM__WEBHOOK_LISTEN"].rsplit(":", 1)[1]
    site = re.search(r"\{\$CADDY_SITE_ADDRESS\} \{(.*?)\n\}", caddyfile, re.S)
    if not site:
        problems.append("no {$CADDY_SITE_ADDRESS} site block")
    else:
        block = re.search(rf"handle {re.escape(webhook_path)} \{{(.*?)\n\t\}}", site.group(1), re.S)
        if not block:
            problems.append(f"the public site does not handle {webhook_path}")
        else:
            upstreams = re.search(r"reverse_proxy ([^{]+)\{", block.group(1))
            got = upstreams.group(1).split() if upstreams else []
            if got != [f"bridge-1:{webhook_port}", f"bridge-2:{webhook_port}"]:
                problems.append(f"webhook upstreams {got}, expected both replicas on :{webhook_port}")
            if f"health_uri {READINESS_PATH}" not in block.group(1) or f"health_port {HTTP_PORT}" not in block.group(1):
                problems.append(f"webhook upstreams are not health-checked on :{HTTP_PORT}{READINESS_PATH}")
    if services["caddy"]["environment"]["CADDY_SITE_ADDRESS"] != env_vars["PUBLIC_HOST"]:
        problems.append("CADDY_SITE_ADDRESS does not default to PUBLIC_HOST")
    report.check("compose: Caddy routes the webhook to both replicas' webhook port", problems)

    # The bridge reads exactly what a container gets: env_file .env, then environment.
    bridge_env = {k: v for k, v in env_vars.items()}
    bridge_env.update({k: str(v) for k, v in env.items()})
    report.check(
        "compose: hitl-bridge check-config accepts a replica's environment",
        # In the image's working directory (/app) config/default.toml is read first.
        config_problems(binary, bridge_env, None, ROOT),
    )

    # Every documented optional setting in .env.example works once uncommented.
    optional = {name: value for name, value in commented.items() if env_key(name)}
    problems = config_problems(binary, {**bridge_env, **optional}, None, ROOT)
    report.check(f"compose: .env.example's commented settings are valid ({len(optional)})", problems)


# ---------------------------------------------------------------------------------------
# Prometheus and Grafana


def promtool_checks(report: Report, promtool: Path, tmp: Path) -> None:
    p = run([str(promtool), "check", "rules", str(ALERTS)])
    report.check("alerts: promtool check rules", [] if p.returncode == 0 else (p.stdout + p.stderr).splitlines())
    p = run([str(promtool), "test", "rules", "alerts.test.yml"], cwd=DEPLOY / "prometheus")
    report.check("alerts: promtool test rules (each alert fires, look-alikes stay quiet)",
                 [] if p.returncode == 0 else (p.stdout + p.stderr).splitlines())

    # The compose Prometheus config, with the rule file where the container mounts it.
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    problems = []
    if config["rule_files"] != ["/etc/prometheus/alerts.yml"]:
        problems.append(f"rule_files {config['rule_files']}")
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    targets = jobs.get("hitl-bridge", {}).get("static_configs", [{}])[0].get("targets")
    if targets != [f"bridge-1:{HTTP_PORT}", f"bridge-2:{HTTP_PORT}"]:
        problems.append(f"job hitl-bridge scrapes {targets}")
    config["rule_files"] = [str(ALERTS)]
    local = tmp / "prometheus.yml"
    local.write_text(yaml.safe_dump(config))
    p = run([str(promtool), "check", "config", str(local)])
    if p.returncode != 0:
        problems += (p.stdout + p.stderr).splitlines()
    report.check("prometheus: compose config scrapes both replicas as job hitl-bridge", problems)


def dashboard_checks(report: Report, promtool: Path, tmp: Path) -> None:
    try:
        dashboard = json.loads(DASHBOARD.read_text())
    except json.JSONDecodeError as e:
        report.check("grafana: dashboard is valid JSON", [str(e)])
        return
    report.check("grafana: dashboard is valid JSON", [])

    problems = []
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    ds = variables.get("datasource", {})
    if ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        problems.append("no Prometheus data source variable `datasource`")
    exprs = []
    for panel in dashboard["panels"]:
        if panel.get("datasource", {}).get("uid") != "${datasource}":
            problems.append(f"panel {panel['title']!r} does not use ${{datasource}}")
        for target in panel.get("targets", []):
            exprs.append((panel["title"], target["expr"]))
    for family in METRIC_FAMILIES:
        if not any(re.search(rf"\b{family}(_bucket|_sum|_count)?\b", e) for _, e in exprs):
            problems.append(f"no panel shows {family}")
    report.check(f"grafana: every metric family is on a panel ({len(exprs)} queries)", problems)

    # Every query parses as PromQL: promtool checks them as recording rules, with
    # Grafana's variables replaced by what Grafana would put there.
    rules = [
        {"record": f"dashboard:query_{i}", "expr": e.replace("$__rate_interval", "5m").replace("$job", ".*")}
        for i, (_, e) in enumerate(exprs)
    ]
    path = tmp / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    p = run([str(promtool), "check", "rules", str(path)])
    report.check("grafana: every panel query is valid PromQL", [] if p.returncode == 0 else (p.stdout + p.stderr).splitlines())

    provisioning = DEPLOY / "grafana" / "provisioning"
    problems = []
    source = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())["datasources"][0]
    if source["type"] != "prometheus" or source["url"] != "http://prometheus:9090" or not source.get("isDefault"):
        problems.append(f"data source {source}")
    provider = yaml.safe_load((provisioning / "dashboards" / "hitl-bridge.yml").read_text())["providers"][0]
    if provider["options"]["path"] != "/var/lib/grafana/dashboards":
        problems.append(f"dashboards provider path {provider['options']['path']}")
    report.check("grafana: provisioning loads Prometheus and the dashboard", problems)


# ---------------------------------------------------------------------------------------
# docs/operations.md


def docs_checks(report: Report) -> None:
    text = OPERATIONS.read_text()
    blocks = re.findall(r"```yaml\n(groups:.*?)```", text, re.S)
    problems = []
    if len(blocks) != 1:
        problems.append(f"expected one ```yaml block starting with groups:, found {len(blocks)}")
    elif yaml.safe_load(blocks[0]) != yaml.safe_load(ALERTS.read_text()):
        problems.append("the alert rules in docs/operations.md differ from files/alerts.yml")
    report.check("docs: the alert rules shown are the chart's", problems)

    known = config_keys()
    problems, pending = [], set()
    names = set(re.findall(r"HITL_BRIDGE__[A-Z_]+__[A-Z_]+", text)) - {"HITL_BRIDGE__SECTION__KEY"}
    for name in sorted(names):
        key = env_key(name)
        if key in known:
            continue
        if key in PENDING_KEYS:
            pending.add(name)
        else:
            problems.append(f"{name} names no key of config/default.toml")
    for section, key in sorted(set(re.findall(r"`([a-z_]+)\.([a-z_]+)`", text))):
        if section in {s for s, _ in known} and (section, key) not in known and (section, key) not in PENDING_KEYS:
            problems.append(f"`{section}.{key}` is not a key of config/default.toml")
    report.check(f"docs: every setting named exists ({len(names)} env names)", problems)
    for name in sorted(pending):
        report.skip(f"docs: {name}", "documented ahead of the branch that adds it to config/default.toml")

    problems = [f"{family} is not documented" for family in METRIC_FAMILIES if family not in text]
    report.check("docs: every metric family is documented", problems)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bridge", type=Path, required=True, help="the hitl-bridge binary")
    parser.add_argument("--promtool", type=Path, required=True)
    args = parser.parse_args()
    args.bridge, args.promtool = args.bridge.resolve(), args.promtool.resolve()
    report = Report()
    with tempfile.TemporaryDirectory(prefix="hitl-deploy-check-") as tmp:
        tmp = Path(tmp)
        chart_checks(report, args.bridge, tmp)
        compose_checks(report, args.bridge, tmp)
        promtool_checks(report, args.promtool, tmp)
        dashboard_checks(report, args.promtool, tmp)
        docs_checks(report)
    print(report.summary())
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
