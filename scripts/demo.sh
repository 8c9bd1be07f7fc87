#!/usr/bin/env bash
# The main job on a fresh machine: install, then crawl the bundled demo site
# (served on 127.0.0.1 by this command) and replay it with the server stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
[ -x .venv/bin/python ] || python3 -m venv .venv
# Exactly the versions CI tested (docs/dependencies.md); a no-op when they are installed.
.venv/bin/pip install -q --require-hashes --no-deps -r requirements.lock
exec .venv/bin/python -m traverse_crawl.demo "$@"
