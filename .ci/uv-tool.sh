#!/usr/bin/env bash
# Makes .venv-lock/bin/uv, the tool that writes the lock files (scripts/lock.sh) and installs
# them (.ci/run): from .ci/uv-tool.lock (pinned, with hashes), or, when that lock does not
# exist yet or names another version, from the requirement given ("uv==X.Y.Z").
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
want=${1:-}
if [ -f .ci/uv-tool.lock ] && { [ -z "$want" ] || grep -qxF "$want \\" .ci/uv-tool.lock; }; then
    source=(--require-hashes --no-deps -r .ci/uv-tool.lock)
    stamp="$(sha256sum .ci/uv-tool.lock | cut -c1-64)"
else
    source=("$want")
    stamp=$want
fi
if [ "$(cat .venv-lock/.installed-from 2>/dev/null)" != "$stamp" ]; then
    rm -rf .venv-lock
    python3 -m venv .venv-lock
    .venv-lock/bin/pip install -q "${source[@]}"
    echo "$stamp" > .venv-lock/.installed-from
fi
