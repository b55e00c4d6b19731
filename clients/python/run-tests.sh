#!/usr/bin/env bash
# Tests of the Python client (clients/python), for CI and for people.
#
# Installs the package with its test extra into a throw-away venv and runs pytest:
# unit tests always; integration tests against the real bridge binary
# ($HITL_BRIDGE_BIN; by default the newer of <target>/debug/hitl-bridge, built by
# `cargo build` or `cargo test`, and <target>/release/hitl-bridge, built by
# `cargo build --release`; <target> is $CARGO_TARGET_DIR or <repo>/target). Without the
# binary the integration tests are skipped, except with CI=true, where they fail.
# Works from any directory; exits non-zero on any failure.
#
#   clients/python/run-tests.sh            # everything
#   clients/python/run-tests.sh -k unit    # extra arguments go to pytest
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"

python="${PYTHON:-python3}"
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "run-tests.sh: needs Python >= 3.10 (set PYTHON=/path/to/python3.x)" >&2
  exit 1
fi

if [[ -z "${HITL_BRIDGE_BIN:-}" ]]; then
  target="${CARGO_TARGET_DIR:-$repo/target}"
  bin=""
  for candidate in "$target/debug/hitl-bridge" "$target/release/hitl-bridge"; do
    if [[ -x "$candidate" && ( -z "$bin" || "$candidate" -nt "$bin" ) ]]; then
      bin="$candidate"
    fi
  done
  export HITL_BRIDGE_BIN="${bin:-$target/debug/hitl-bridge}"
fi
echo "run-tests.sh: the bridge binary is $HITL_BRIDGE_BIN" >&2

if [[ "${CI:-}" == "true" ]]; then
  bin="$HITL_BRIDGE_BIN"
  if [[ ! -x "$bin" ]]; then
    echo "run-tests.sh: CI=true and the bridge binary $bin is missing: the integration tests will fail" >&2
  fi
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/hitl-bridge-client-tests.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

export PIP_DISABLE_PIP_VERSION_CHECK=1
if "$python" -m venv "$tmp/venv" >/dev/null 2>&1; then
  py="$tmp/venv/bin/python"
  "$py" -m pip install --quiet -e "./clients/python[test]"
else
  # No venv module (e.g. Debian's python3 without python3-venv): a user install.
  echo "run-tests.sh: python -m venv is unavailable; installing with pip --user" >&2
  py="$python"
  "$py" -m pip install --quiet --user -e "./clients/python[test]"
fi

# Keep pytest's cache out of the work tree.
"$py" -m pytest clients/python/tests -q -rs -p no:cacheprovider "$@"
