#!/usr/bin/env bash
# Install what stormatrix needs on a Debian 12 machine, only what is missing:
#   1. the Debian packages in scripts/apt-packages.txt (apt-get; as root, or through sudo)
#   2. a project venv (.venv) over Debian's /usr/bin/python3 with --system-site-packages, and
#      stormatrix installed into it in editable mode (no PyPI: --no-build-isolation --no-deps)
# PowerShell 7 and Pester 5 are scripts/install-pwsh.sh's job (called by `make test`).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

mapfile -t PKGS < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' scripts/apt-packages.txt | awk 'NF {print $1}')
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
        SUDO="sudo"
    fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import stormatrix' 2>/dev/null; then
    echo "setup: creating .venv over /usr/bin/python3 (system site packages) and installing stormatrix"
    /usr/bin/python3 -m venv --system-site-packages .venv
    .venv/bin/python -m pip install -q --no-build-isolation --no-deps -e .
fi
