#!/usr/bin/env bash
# Build the hosted PowerShell 7.6 engine (tests/pwsh/host, System.Management.Automation 7.6.9 from NuGet)
# into .tools/pwsh-host/ when its sources changed. Prints nothing on success unless it built.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/tests/pwsh/host"
OUT="$ROOT/.tools/pwsh-host"
STAMP="$OUT/.sources.sha256"
command -v dotnet >/dev/null || { echo "build-pwsh-host: dotnet not found: install the .NET SDK (10.0)" >&2; exit 3; }
sum="$(cat "$SRC"/*.cs "$SRC"/*.csproj "$ROOT/scripts/build-pwsh-host.sh" | sha256sum | cut -d' ' -f1)"
if [[ -f "$OUT/StormatrixPwshHost.dll" && -f "$STAMP" && "$(cat "$STAMP")" == "$sum" ]]; then
    exit 0
fi
echo "build-pwsh-host: building the PowerShell engine host into .tools/pwsh-host"
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
log="$(mktemp)"
# ReadyToRun (precompiled) halves the engine's start-up CPU time, which every test process pays; it needs
# the runtime pack from NuGet. Where that cannot be had, a plain build works the same, only slower.
rm -rf "$OUT"
if ! dotnet publish "$SRC/StormatrixPwshHost.csproj" -c Release --use-current-runtime --self-contained false \
        -p:PublishReadyToRun=true -o "$OUT" -nologo >"$log" 2>&1; then
    echo "build-pwsh-host: ReadyToRun publish failed ($(grep -m 1 -E 'error' "$log" || tail -n 1 "$log")); plain build instead" >&2
    if ! dotnet build "$SRC/StormatrixPwshHost.csproj" -c Release -o "$OUT" -nologo >"$log" 2>&1; then
        grep -E "error|Error" "$log" | head -n 20 >&2 || tail -n 20 "$log" >&2
        rm -f "$log"
        echo "build-pwsh-host: dotnet build failed (see above)" >&2
        exit 3
    fi
fi
rm -f "$log"
echo "$sum" > "$STAMP"
