#!/usr/bin/env bash
# Build the Open XML validator (tests/openxml: a console tool over Microsoft's Open XML SDK, NuGet
# DocumentFormat.OpenXml 3.3.0, pinned in its .csproj) into .cache/openxml-check/ (gitignored), once.
# The tests validate every workbook they write with it (tests/openxmlcheck.py).
#
# Idempotent: a build whose stamp matches the sources is kept. Exit 0 built (or already), 3 it could
# not be built (the failing command and the end of its output are printed).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/tests/openxml"
OUT="$ROOT/.cache/openxml-check"
STEP_TIMEOUT="${STORMATRIX_INSTALL_TIMEOUT:-300}"
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

if ! command -v dotnet >/dev/null 2>&1; then
    echo "install-openxml-check: FAILED: dotnet not found; install the .NET SDK 8 or newer, then run:" \
        "bash scripts/install-openxml-check.sh" >&2
    exit 3
fi
mkdir -p "$ROOT/.cache"
# one build at a time: two test sessions starting together must not remove each other's build
exec 9>"$ROOT/.cache/openxml-check.lock"
flock 9
stamp="$(cat "$SRC/OpenXmlCheck.csproj" "$SRC/Program.cs" | sha256sum | cut -d' ' -f1)"
if [[ -f "$OUT/bin/OpenXmlCheck.dll" && "$(cat "$OUT/stamp" 2>/dev/null)" == "$stamp" ]]; then
    exit 0
fi
rm -rf "$OUT"
mkdir -p "$OUT"
log="$(mktemp)"
rc=0
# obj/ next to the output, so the source folder stays clean
timeout "$STEP_TIMEOUT" dotnet build "$SRC/OpenXmlCheck.csproj" -c Release -o "$OUT/bin" \
    -p:BaseIntermediateOutputPath="$OUT/obj/" -p:MSBuildProjectExtensionsPath="$OUT/obj/" >"$log" 2>&1 || rc=$?
if [[ $rc -ne 0 || ! -f "$OUT/bin/OpenXmlCheck.dll" ]]; then
    [[ $rc -eq 124 ]] && echo "(timed out after ${STEP_TIMEOUT}s; STORMATRIX_INSTALL_TIMEOUT sets the limit)" >>"$log"
    echo "install-openxml-check: FAILED (exit $rc): dotnet build $SRC/OpenXmlCheck.csproj" >&2
    tail -n 20 "$log" | sed 's/^/install-openxml-check:   | /' >&2
    rm -f "$log"
    exit 3
fi
rm -f "$log"
echo "$stamp" > "$OUT/stamp"
