#!/usr/bin/env bash
# Installs the real agent backends the connector tests run (tests/backends/<name>/):
# a Python one into its own virtualenv under target/backends/<name>/venv, from PyPI at
# the versions pinned in tests/backends/<name>/requirements.txt; an npm one (a
# package.json and its package-lock.json) into target/backends/<name>/node_modules
# with `npm ci`, at the versions its lock file pins (Node 20 and npm needed).
#
#   tests/backends/install.sh              # every backend
#   tests/backends/install.sh kimi agno    # some of them
#
# A backend whose Python (tests/backends/<name>/python-version, e.g. 3.12) cannot be
# found is skipped with a message, and its tests skip too, except under CI=true, where
# this script then fails. Set PYTHON_<NAME> (e.g. PYTHON_KIMI=/usr/bin/python3.12) to
# choose the interpreter. Re-running is cheap: an install whose requirements did not
# change is kept.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
root="${HITL_BRIDGE_BACKENDS_DIR:-$repo/target/backends}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

# The first interpreter that is at least version $1 (major.minor).
find_python() {
  local want="$1" name="$2" candidate
  local override="PYTHON_$(echo "$name" | tr '[:lower:]-' '[:upper:]_')"
  local candidates=("${!override:-}" "python$want" python3.13 python3.12 python3)
  for dir in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/*/bin; do candidates+=("$dir/python3"); done
  for candidate in "${candidates[@]}"; do
    [[ -n "$candidate" ]] || continue
    if "$candidate" -c "import sys; sys.exit(sys.version_info < tuple(map(int, '$want'.split('.'))))" 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
  for dir in "$here"/*/; do [[ -f "$dir/requirements.txt" || -f "$dir/package.json" ]] && names+=("$(basename "$dir")"); done
fi

failed=0
for name in "${names[@]}"; do
  spec="$here/$name"
  if [[ -f "$spec/package.json" ]]; then
    dest="$root/$name"
    stamp="$dest/installed.sha256"
    digest="$(cat "$spec/package.json" "$spec/package-lock.json" | sha256sum | cut -d' ' -f1)"
    if [[ -d "$dest/node_modules" && "$(cat "$stamp" 2>/dev/null)" == "$digest" ]]; then
      echo "install.sh: $name is installed ($dest/node_modules)"
      continue
    fi
    if ! command -v npm >/dev/null; then
      echo "install.sh: $name needs Node.js 20 and npm, and npm was not found; its tests will skip" >&2
      [[ "${CI:-}" == "true" ]] && failed=1
      continue
    fi
    echo "install.sh: installing $name with npm $(npm --version) into $dest"
    rm -rf "$dest"
    mkdir -p "$dest"
    cp "$spec/package.json" "$spec/package-lock.json" "$dest/"
    (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$digest" > "$stamp"
    continue
  fi
  if [[ ! -f "$spec/requirements.txt" ]]; then
    echo "install.sh: unknown backend $name (no $spec/requirements.txt or package.json)" >&2
    failed=1
    continue
  fi
  want="$(cat "$spec/python-version" 2>/dev/null || echo 3.10)"
  venv="$root/$name/venv"
  stamp="$root/$name/installed.sha256"
  digest="$(sha256sum "$spec/requirements.txt" | cut -d' ' -f1)"
  if [[ -x "$venv/bin/python" && "$(cat "$stamp" 2>/dev/null)" == "$digest" ]]; then
    echo "install.sh: $name is installed ($venv)"
    continue
  fi
  if ! python="$(find_python "$want" "$name")"; then
    echo "install.sh: $name needs Python >= $want and none was found; its tests will skip (set PYTHON_${name^^})" >&2
    [[ "${CI:-}" == "true" ]] && failed=1
    continue
  fi
  echo "install.sh: installing $name with $("$python" --version 2>&1) into $venv"
  rm -rf "$root/$name"
  mkdir -p "$root/$name"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet -r "$spec/requirements.txt"
  echo "$digest" > "$stamp"
done
exit "$failed"
