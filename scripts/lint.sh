#!/usr/bin/env bash
# Lint (flake8) and type check (mypy) the product's Python: harness/, analysis/, linux-host/.
# Both come from Debian (python3-flake8, mypy; scripts/apt-packages.txt) and run under the project venv,
# which sees Debian's site packages. Configuration: .flake8 and [tool.mypy] in pyproject.toml.
# Prints each tool's findings and a one-line summary per tool; exits 1 when either has findings,
# 2 when a tool is missing.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${STORMATRIX_PYTHON:-.venv/bin/python}"

for mod in flake8 mypy; do
    if ! "$PY" -m "$mod" --version > /dev/null 2>&1; then
        echo "lint: $PY cannot run $mod: install Debian's python3-flake8 and mypy (bash scripts/setup.sh)" >&2
        exit 2
    fi
done

status=0

echo "== flake8 =="
log="$(mktemp)"
"$PY" -m flake8 harness analysis linux-host | tee "$log"
frc=${PIPESTATUS[0]}
n=$(grep -c . "$log")
rm -f "$log"
if [ "$frc" -eq 0 ]; then
    flake8_summary="flake8: no findings"
else
    flake8_summary="flake8: $n finding(s)"
    status=1
fi

# pyproject.toml maps three folders onto one package (stormatrix = harness/, stormatrix.analysis =
# analysis/, stormatrix.host = linux-host/). mypy follows neither that mapping nor the editable install,
# so it checks a tree of symlinks with the installed layout, rebuilt on every run.
echo
echo "== mypy =="
tree=".cache/typecheck"
rm -rf "$tree"
mkdir -p "$tree/stormatrix"
for entry in harness/*; do
    name="$(basename "$entry")"
    case "$name" in __pycache__) continue ;; esac
    ln -s "$ROOT/$entry" "$tree/stormatrix/$name"
done
ln -s "$ROOT/analysis" "$tree/stormatrix/analysis"
ln -s "$ROOT/linux-host" "$tree/stormatrix/host"
log="$(mktemp)"
# --cache-dir stays inside .cache (gitignored); paths in messages are mapped back to the repository's.
(cd "$tree" && "$ROOT/$PY" -m mypy --config-file "$ROOT/pyproject.toml" --cache-dir "$ROOT/.cache/mypy" \
    -p stormatrix) > "$log" 2>&1
mrc=$?
sed -e 's#^stormatrix/analysis/#analysis/#' -e 's#^stormatrix/host/#linux-host/#' -e 's#^stormatrix/#harness/#' "$log"
mypy_summary="mypy: $(tail -n 1 "$log")"
rm -f "$log"
[ "$mrc" -ne 0 ] && status=1

# The same package type-checked as Windows sees it (a Windows workstation runs plan, run with proxmox over the
# API and vmware, report, compare: docs/windows-workstation.md). What is Linux-only by nature is listed, with the
# reason, in scripts/linux-only-modules.txt; a finding anywhere else fails the lint.
echo
echo "== mypy --platform win32 (outside scripts/linux-only-modules.txt) =="
log="$(mktemp)"
(cd "$tree" && "$ROOT/$PY" -m mypy --config-file "$ROOT/pyproject.toml" --cache-dir "$ROOT/.cache/mypy-win32" \
    --platform win32 -p stormatrix) > "$log" 2>&1
wrc=$?
mapped="$(sed -e 's#^stormatrix/analysis/#analysis/#' -e 's#^stormatrix/host/#linux-host/#' -e 's#^stormatrix/#harness/#' "$log")"
skip="$(grep -v '^#' scripts/linux-only-modules.txt | awk 'NF {print $1}')"
left="$(printf '%s\n' "$mapped" | grep -E '^[^ ]+\.py:[0-9]+: (error|note)' | while IFS= read -r line; do
    keep=1
    for prefix in $skip; do
        case "$line" in "$prefix"*) keep=0; break ;; esac
    done
    [ "$keep" -eq 1 ] && printf '%s\n' "$line"
done)"
skipped=$(printf '%s\n' "$mapped" | grep -cE '^[^ ]+\.py:[0-9]+: error')
if [ -n "$left" ]; then
    printf '%s\n' "$left"
    n=$(printf '%s\n' "$left" | grep -c ': error')
    win_summary="mypy win32: $n finding(s) outside the Linux-only modules"
    status=1
elif [ "$wrc" -ne 0 ] && ! printf '%s\n' "$mapped" | grep -qE '^[^ ]+\.py:[0-9]+: error'; then
    printf '%s\n' "$mapped"  # mypy itself failed (no findings to show)
    win_summary="mypy win32: failed"
    status=1
else
    win_summary="mypy win32: no findings outside the Linux-only modules ($skipped in them)"
fi
rm -f "$log"

echo
echo "== lint summary =="
echo "$flake8_summary"
echo "$mypy_summary"
echo "$win_summary"
exit $status
