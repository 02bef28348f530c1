#!/usr/bin/env bash
# Shared set-up for demo.sh and test.sh: a virtual environment in .venv made from Debian's
# /usr/bin/python3 with --system-site-packages (so Debian's pyopenvdb imports), and the package
# installed in editable mode with its test extras. Idempotent: a second run only checks a stamp.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY=/usr/bin/python3
STAMP="$VENV/.pbdcloth-installed"
# numpy<2: Debian's pyopenvdb is built against numpy 1.x and fails to import under numpy 2.
CONSTRAINTS="$ROOT/scripts/constraints.txt"

need_apt=()
[ -x "$PY" ] || need_apt+=(python3)
"$PY" -c "import venv, ensurepip" 2>/dev/null || need_apt+=(python3-venv)
"$PY" -c "import pyopenvdb" 2>/dev/null || need_apt+=(python3-openvdb)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "pbdcloth: installing Debian packages: ${need_apt[*]}" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "pbdcloth: creating $VENV" >&2
    "$PY" -m venv --system-site-packages "$VENV"
fi

# Reinstall when the project's requirements change.
want="$(cat "$ROOT/pyproject.toml" "$CONSTRAINTS" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ]; then
    echo "pbdcloth: installing the package and its test extras into .venv" >&2
    "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
    PIP_CONSTRAINT="$CONSTRAINTS" "$VENV/bin/python" -m pip install -q -e "$ROOT[test]"
    echo "$want" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
