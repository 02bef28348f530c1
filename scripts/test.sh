#!/usr/bin/env bash
# Set up on first use, then run the test suite: `./scripts/test.sh [--all] [pytest options]`.
# The default run leaves out the tests marked slow; --all runs every test (CI does). Tests run in
# PBDCLOTH_TEST_WORKERS processes (pytest-xdist; default 2, the machine's cores; 1 runs them in
# this process).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"
cd "$ROOT"
WORKERS="${PBDCLOTH_TEST_WORKERS:-2}"
PARALLEL=()
# worksteal: a worker that runs out of tests takes queued ones from the other, so a long test
# near the end of one worker's share does not leave the other idle
[ "$WORKERS" -gt 1 ] && PARALLEL=(-n "$WORKERS" --dist worksteal)
if [ "${1:-}" = "--all" ]; then
    shift
    exec python -m pytest "${PARALLEL[@]}" "$@"
fi
exec python -m pytest "${PARALLEL[@]}" -m "not slow" "$@"
