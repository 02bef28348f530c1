#!/usr/bin/env bash
# Set up on first use, then run the built-in demo scene: `./scripts/demo.sh [pbdcloth demo options]`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"
cd "$ROOT"
exec pbdcloth demo "$@"
