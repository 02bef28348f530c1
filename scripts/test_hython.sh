#!/usr/bin/env bash
# Run the tests that need Houdini (tests/hython) with hython, when hython is on PATH.
#   ./scripts/test_hython.sh [pytest options]
# Houdini's Python needs pytest: hython -m pip install pytest (see README, "Houdini").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v hython >/dev/null 2>&1; then
    echo "SKIPPED: hython is not on PATH, so the Houdini tests in tests/hython did not run."
    echo "         Source houdini_setup (or add \$HFS/bin to PATH) and run this script again."
    exit 0
fi
export PYTHONPATH="$PWD/python3.11libs${PYTHONPATH:+:$PYTHONPATH}"
echo "running tests/hython with $(command -v hython)"
exec hython -m pytest tests/hython -p no:cacheprovider "$@"
