#!/usr/bin/env bash
# Set up on first use, then run the test suite: `./scripts/test.sh [--all] [pytest options]`.
# The default run leaves out the tests marked slow; --all runs every test (CI does).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"
cd "$ROOT"
if [ "${1:-}" = "--all" ]; then
    shift
    exec python -m pytest "$@"
fi
exec python -m pytest -m "not slow" "$@"
