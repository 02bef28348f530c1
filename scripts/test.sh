#!/usr/bin/env bash
# Set up on first use, then run the whole test suite: `./scripts/test.sh [pytest options]`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"
cd "$ROOT"
exec python -m pytest "$@"
