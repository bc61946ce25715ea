#!/usr/bin/env bash
# All tests: install PowerShell 7.6.9 + Pester 5.7.1 (scripts/install-pwsh.sh, pinned, into .tools/), build
# the Open XML validator (scripts/install-openxml-check.sh, into .cache/), pytest (its PowerShell-driving
# tests on that same pwsh; at its end every workbook it wrote goes through the validator, tests/conftest.py),
# flake8 and mypy (scripts/lint.sh), then every PowerShell test under Pester 5 (tests/pester/Invoke-StormatrixPester.ps1). Prints each summary and ends
# with Pester's own summary line. Fails if any part fails; when pwsh or Pester cannot be installed it
# fails at once, naming the command that failed (no fallback).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

echo "== PowerShell $(sed -n 's/^PWSH_VERSION="\(.*\)"/\1/p' scripts/install-pwsh.sh) and Pester $(sed -n 's/^PESTER_VERSION="\(.*\)"/\1/p' scripts/install-pwsh.sh) (scripts/install-pwsh.sh) =="
if ! bash scripts/install-pwsh.sh; then
    echo "make test: cannot run the tests without PowerShell and Pester (see the failing command above)" >&2
    exit 1
fi
echo "== Open XML validator (scripts/install-openxml-check.sh: DocumentFormat.OpenXml 3.3.0 from NuGet) =="
if ! bash scripts/install-openxml-check.sh; then
    echo "make test: cannot validate the workbooks without the Open XML validator (see the failing command above)" >&2
    exit 1
fi
# shellcheck disable=SC1091
. .tools/env.sh
export STORMATRIX_PWSH STORMATRIX_PESTER_PSD1
export NO_COLOR=1 POWERSHELL_TELEMETRY_OPTOUT=1

status=0
echo
echo "== pytest =="
log="$(mktemp)"
.venv/bin/python -m pytest -q -p no:cacheprovider --durations=30 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then status=1; fi
pytest_summary="pytest: $(grep -E '(passed|failed|error|no tests ran)' "$log" | tail -n 1 | sed 's/^=* *//; s/ *=*$//')"
openxml_summary="$(grep -oE 'openxml-check: [0-9]+ workbook.*' "$log" | tail -n 1)"
[ -z "$openxml_summary" ] && openxml_summary="openxml-check: no workbook written"
rm -f "$log"

echo
echo "== lint and type check (flake8, mypy) =="
log="$(mktemp)"
bash scripts/lint.sh | tee "$log"
[ "${PIPESTATUS[0]}" -ne 0 ] && status=1
lint_summary="$(sed -n '/== lint summary ==/,$p' "$log" | tail -n +2)"
rm -f "$log"

echo
echo "== Pester (PowerShell tests) =="
log="$(mktemp)"
"$STORMATRIX_PWSH" -NoLogo -NoProfile -NonInteractive -File tests/pester/Invoke-StormatrixPester.ps1 | tee "$log"
prc=${PIPESTATUS[0]}
[ "$prc" -ne 0 ] && status=1
pester_summary="$(grep -E '^Tests Passed: ' "$log" | tail -n 1)"
[ -z "$pester_summary" ] && pester_summary="Pester did not finish (exit $prc): see above"
rm -f "$log"

echo
echo "== summary =="
echo "$pytest_summary"
echo "$openxml_summary"
echo "$lint_summary"
echo "$pester_summary"
exit $status
