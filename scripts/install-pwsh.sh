#!/usr/bin/env bash
# Install PowerShell 7.6.9 and Pester 5.7.1, pinned, into the project-local .tools/ folder, from NuGet.
#
# Why NuGet: PowerShell is not packaged by Debian, and the test command must not need root. PowerShell
# ships as a .NET tool ("PowerShell" on nuget.org: `dotnet tool install PowerShell`), Pester as a NuGet
# package (restored by a throwaway project with a <PackageDownload>); both land under .tools/
# (gitignored), so a checkout never touches the system. PSScriptAnalyzer is a PowerShell Gallery
# package only (not on NuGet): the project's own parse / 5.1 / binding checks (tests/pwsh/Checks) run
# instead.
#
# Idempotent: a .tools/pwsh that reports the pinned version and a restored Pester of the pinned version
# are kept. No fallback: a pwsh on PATH or a Pester of another version is not used, so every machine
# runs the tests on the same two versions.
#
# Writes .tools/env.sh (STORMATRIX_PWSH, STORMATRIX_PESTER_PSD1), which scripts/test.sh and
# tests/pwshengine.py read.
#
# Exit codes: 0 both are installed; 3 one could not be installed (the failing command and the end of
# its output are printed); 1 a bug in this script.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
PWSH_DIR="$TOOLS/pwsh"
NUGET_DIR="$TOOLS/nuget"
ENV_FILE="$TOOLS/env.sh"
PWSH_VERSION="7.6.9"
PESTER_VERSION="5.7.1"
# network steps are bounded: a feed that does not answer must not hold `make test` up forever
STEP_TIMEOUT="${STORMATRIX_INSTALL_TIMEOUT:-300}"
EXIT_CANNOT_INSTALL=3
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1 POWERSHELL_TELEMETRY_OPTOUT=1

mkdir -p "$TOOLS"

# run COMMAND...: run it bounded; on failure print the command, its exit code and the end of its output,
# and stop with exit 3.
run() {
    local log rc=0
    log="$(mktemp)"
    timeout "$STEP_TIMEOUT" "$@" >"$log" 2>&1 || rc=$?
    if [[ $rc -ne 0 ]]; then
        [[ $rc -eq 124 ]] && echo "(timed out after ${STEP_TIMEOUT}s; STORMATRIX_INSTALL_TIMEOUT sets the limit)" >>"$log"
        echo "install-pwsh: FAILED (exit $rc): $*" >&2
        tail -n 20 "$log" | sed 's/^/install-pwsh:   | /' >&2
        rm -f "$log"
        exit $EXIT_CANNOT_INSTALL
    fi
    rm -f "$log"
}

if ! command -v dotnet >/dev/null 2>&1; then
    echo "install-pwsh: FAILED: dotnet not found; install the .NET SDK 8 or newer (Debian: dotnet-sdk-8.0 from" \
        "packages.microsoft.com), then run: bash scripts/install-pwsh.sh" >&2
    exit $EXIT_CANNOT_INSTALL
fi

# --- PowerShell ------------------------------------------------------------------------------------
PWSH="$PWSH_DIR/pwsh"
installed=""
if [[ -x "$PWSH" ]]; then
    installed="$(timeout 60 "$PWSH" -NoLogo -NoProfile -NonInteractive -Command '$PSVersionTable.PSVersion.ToString()' 2>/dev/null)"
fi
if [[ "$installed" != "$PWSH_VERSION" ]]; then
    if [[ -n "$installed" || -e "$PWSH_DIR" ]]; then
        echo "install-pwsh: replacing .tools/pwsh (${installed:-unusable}) with PowerShell $PWSH_VERSION" >&2
        rm -rf "$PWSH_DIR"
    fi
    echo "install-pwsh: dotnet tool install PowerShell --version $PWSH_VERSION --tool-path $PWSH_DIR" >&2
    run dotnet tool install PowerShell --version "$PWSH_VERSION" --tool-path "$PWSH_DIR"
    run "$PWSH" -NoLogo -NoProfile -NonInteractive -Command '$PSVersionTable.PSVersion.ToString()'
fi

# --- Pester (a NuGet package, restored by a throwaway project) ------------------------------------
PESTER_PSD1="$NUGET_DIR/pester/$PESTER_VERSION/tools/Pester.psd1"
if [[ ! -f "$PESTER_PSD1" ]]; then
    proj="$(mktemp -d)"
    cat >"$proj/restore.csproj" <<EOF
<Project Sdk="Microsoft.NET.Sdk">
  <PropertyGroup><TargetFramework>netstandard2.0</TargetFramework></PropertyGroup>
  <ItemGroup><PackageDownload Include="Pester" Version="[$PESTER_VERSION]" /></ItemGroup>
</Project>
EOF
    echo "install-pwsh: dotnet restore (PackageDownload Pester $PESTER_VERSION) --packages $NUGET_DIR" >&2
    run dotnet restore "$proj/restore.csproj" --packages "$NUGET_DIR"
    rm -rf "$proj"
    if [[ ! -f "$PESTER_PSD1" ]]; then
        echo "install-pwsh: FAILED: the restore of Pester $PESTER_VERSION left no $PESTER_PSD1" >&2
        exit $EXIT_CANNOT_INSTALL
    fi
    run "$PWSH" -NoLogo -NoProfile -NonInteractive -Command "Import-Module '$PESTER_PSD1'; if ((Get-Module Pester).Version -ne [version]'$PESTER_VERSION') { throw 'not Pester $PESTER_VERSION' }"
fi

{
    echo "# written by scripts/install-pwsh.sh; source it to find the PowerShell test tools"
    echo "STORMATRIX_PWSH='$PWSH'"
    echo "STORMATRIX_PESTER_PSD1='$PESTER_PSD1'"
} >"$ENV_FILE"
echo "install-pwsh: PowerShell $PWSH_VERSION ($PWSH), Pester $PESTER_VERSION ($PESTER_PSD1)" >&2
exit 0
