#!/usr/bin/env bash
# Checks the deployment files (deploy/check.py says what): the Helm chart rendered and
# linted by Helm's own engine, the compose file and every setting it passes checked by
# the bridge's `check-config`, the alert rules and dashboard queries by promtool.
#
# Installs what it needs under target/deploy-check (idempotent, pinned):
#   - helm-python-sdk (PyPI; Helm v4's Go SDK in a wheel) and PyYAML in a virtualenv;
#   - promtool, taken out of Debian's prometheus package without installing it.
# Uses target/debug/hitl-bridge when present (`cargo test` builds it), else builds it.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_SDK_VERSION=0.2.2
PYYAML_VERSION=6.0.2
TOOLS=target/deploy-check

python="${PYTHON:-python3}"
venv="$TOOLS/venv"
stamp="helm-python-sdk==$HELM_SDK_VERSION pyyaml==$PYYAML_VERSION"
if [[ ! -x "$venv/bin/python" || "$(cat "$venv/.stamp" 2>/dev/null)" != "$stamp" ]]; then
  echo "deploy/check.sh: installing $stamp into $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "helm-python-sdk==$HELM_SDK_VERSION" "pyyaml==$PYYAML_VERSION"
  echo "$stamp" > "$venv/.stamp"
fi

promtool="$TOOLS/promtool/promtool"
if [[ ! -x "$promtool" ]]; then
  echo "deploy/check.sh: extracting promtool from Debian's prometheus package"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  if ! (cd "$work" && apt-get download prometheus >/dev/null 2>&1); then
    apt-get update -qq
    (cd "$work" && apt-get download prometheus >/dev/null 2>&1)
  fi
  dpkg-deb -x "$work"/prometheus_*.deb "$work/root"
  mkdir -p "$(dirname "$promtool")"
  cp "$work/root/usr/bin/promtool" "$promtool"
fi

bridge=target/debug/hitl-bridge
if [[ ! -x "$bridge" ]]; then
  echo "deploy/check.sh: building hitl-bridge"
  cargo build --locked --bin hitl-bridge
fi

exec "$venv/bin/python" deploy/check.py --bridge "$bridge" --promtool "$promtool"
