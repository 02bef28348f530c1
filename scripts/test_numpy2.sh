#!/usr/bin/env bash
# The core on numpy 2 with nothing optional installed (no pyopenvdb, matplotlib, usd-core, warp):
# a second virtual environment, .venv-numpy2, with only numpy>=2, pytest and pytest-xdist, running
# the core tests.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-numpy2"
PY=/usr/bin/python3
[ -x "$PY" ] || PY="$(command -v python3)"
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$VENV/bin/python" -m pip install -q "numpy>=2" pytest
fi
# two processes, as ./scripts/test.sh runs (PBDCLOTH_TEST_WORKERS=1: one)
"$VENV/bin/python" -c "import xdist" 2>/dev/null || "$VENV/bin/python" -m pip install -q pytest-xdist
WORKERS="${PBDCLOTH_TEST_WORKERS:-2}"
PARALLEL=()
[ "$WORKERS" -gt 1 ] && PARALLEL=(-n "$WORKERS" --dist worksteal)
cd "$ROOT"
"$VENV/bin/python" -c "import numpy; print('numpy', numpy.__version__)"
PYTHONPATH="$ROOT/python3.11libs" exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
    "${PARALLEL[@]}" tests/test_mesh.py tests/test_topology.py tests/test_solver.py tests/test_xpbd.py "$@"
