#!/usr/bin/env bash
# All tests: pytest, flake8 and mypy (scripts/lint.sh), then the PowerShell tests on the hosted PowerShell 7.6 engine (tests/pwsh/host,
# with PesterLite), then Pester 5 under a real pwsh where one can be had. Prints each summary; fails if
# any fails. When pwsh/Pester cannot be installed here it says exactly why and does not pretend.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

status=0
echo "== pytest =="
.venv/bin/python -m pytest -q -p no:cacheprovider
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 5 ]; then status=1; fi

echo
echo "== lint and type check (flake8, mypy) =="
lint_log="$(mktemp)"
bash scripts/lint.sh | tee "$lint_log"
[ "${PIPESTATUS[0]}" -ne 0 ] && status=1
lint_summary="$(sed -n '/== lint summary ==/,$p' "$lint_log" | tail -n +2)"
rm -f "$lint_log"

echo
echo "== PowerShell engine (hosted) =="
engine_summary=""
if bash scripts/build-pwsh-host.sh; then
    log="$(mktemp)"
    # always the hosted engine here, even where a real pwsh is configured: that one runs Pester below
    env -u STORMATRIX_REAL_PWSH tests/pwsh/pwsh -NoLogo -NoProfile -NonInteractive \
        -File tests/pwsh/Invoke-EngineTests.ps1 -Engine | tee "$log"
    erc=${PIPESTATUS[0]}
    engine_summary="$(grep -E '^PowerShell engine .*: [0-9]+ passed' "$log" | tail -n 1)"
    rm -f "$log"
    if [ "$erc" -ne 0 ] || [ -z "$engine_summary" ]; then status=1; fi
    [ -z "$engine_summary" ] && engine_summary="PowerShell engine: did not finish (exit $erc)"
else
    engine_summary="PowerShell engine: not run (scripts/build-pwsh-host.sh failed, see above)"
    status=1
fi

echo
echo "== Pester 5 =="
bash scripts/install-pwsh.sh > .tools-install.log 2>&1
prc=$?
pester_summary=""
if [ $prc -eq 0 ]; then
    # shellcheck disable=SC1091
    . .tools/env.sh
    export STORMATRIX_PESTER_PSD1 STORMATRIX_PSSA_PSD1
    log="$(mktemp)"
    # the same files as above (tests/pester and tests/pwsh); under a real pwsh with Pester 5,
    # Invoke-EngineTests.ps1 hands them to Pester (tests/pester/Invoke-StormatrixPester.ps1)
    "$STORMATRIX_PWSH" -NoProfile -NonInteractive -File tests/pwsh/Invoke-EngineTests.ps1 | tee "$log"
    prc=${PIPESTATUS[0]}
    pester_summary="Pester 5: $(grep -E '^Tests Passed:' "$log" | tail -n 1)"
    rm -f "$log"
    [ $prc -ne 0 ] && status=1
elif [ $prc -eq 3 ]; then
    reason="$(cat .tools/pwsh-install-reason.txt 2>/dev/null)"
    pester_summary="Pester 5: not run (pwsh not installed: ${reason:-see scripts/install-pwsh.sh})"
    sed 's/^/  /' .tools-install.log
else
    echo "Pester: install script failed unexpectedly (exit $prc):"
    cat .tools-install.log
    pester_summary="Pester 5: not run (scripts/install-pwsh.sh failed with exit $prc)"
    status=1
fi
rm -f .tools-install.log

echo
echo "== summary =="
echo "$lint_summary"
echo "$engine_summary"
echo "$pester_summary"
exit $status
