#!/usr/bin/env bash
# All tests: pytest, then Pester under PowerShell 7. Prints both summaries; fails if either fails.
# When PowerShell 7/Pester 5 cannot be installed on this machine, says exactly why and does not
# pretend they ran (the pytest tests that need pwsh are skipped with the same reason).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

status=0
echo "== pytest =="
.venv/bin/python -m pytest -q -p no:cacheprovider
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 5 ]; then status=1; fi

echo
echo "== Pester =="
bash scripts/install-pwsh.sh > .tools-install.log 2>&1
prc=$?
if [ $prc -eq 0 ]; then
    # shellcheck disable=SC1091
    . .tools/env.sh
    "$STORMATRIX_PWSH" -NoProfile -NonInteractive -File tests/pester/Invoke-StormatrixPester.ps1 || status=1
elif [ $prc -eq 3 ]; then
    echo "Pester: not run: PowerShell 7 / Pester 5 could not be installed on this machine:"
    sed 's/^/  /' .tools-install.log
else
    echo "Pester: install script failed unexpectedly (exit $prc):"
    cat .tools-install.log
    status=1
fi
rm -f .tools-install.log
exit $status
