#!/usr/bin/env bash
# Install PowerShell 7, Pester 5 and PSScriptAnalyzer into the project-local .tools/ folder, from NuGet.
#
# Why NuGet: PowerShell is not packaged by Debian, and the test command must not need root. PowerShell
# ships as a .NET global tool ("PowerShell" on nuget.org), Pester and PSScriptAnalyzer as NuGet
# packages; all three land under .tools/ (gitignored), so a checkout never touches the system.
#
# Idempotent: whatever is already there is kept. A `pwsh` already on PATH is accepted as is.
#
# Exit codes (the Makefile relies on them):
#   0  pwsh and Pester 5 are usable; .tools/env.sh says where (PSScriptAnalyzer may still be missing:
#      that is reported, not fatal)
#   3  something could not be installed: the failing command and its output are printed, so
#      `make test` can say "Pester not run: <reason>" instead of pretending.
#   1  a bug in this script
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
PWSH_DIR="$TOOLS/pwsh"
NUGET_DIR="$TOOLS/nuget"
ENV_FILE="$TOOLS/env.sh"
REASON_FILE="$TOOLS/pwsh-install-reason.txt"
# network steps are bounded: a slow feed must not hold `make test` up
STEP_TIMEOUT="${STORMATRIX_INSTALL_TIMEOUT:-90}"
# 7.4.x is the LTS line; it targets net8.0, so on a machine that only has a newer runtime (.NET 10
# here) it runs through DOTNET_ROLL_FORWARD=Major.
PWSH_VERSION="${STORMATRIX_PWSH_VERSION:-7.4.6}"
PESTER_VERSION="${STORMATRIX_PESTER_VERSION:-5.6.1}"
PSSA_VERSION="${STORMATRIX_PSSA_VERSION:-1.23.0}"
EXIT_CANNOT_INSTALL=3

mkdir -p "$TOOLS"
reasons=()

# attempt LABEL COMMAND...: run a command, keep its output; on failure remember "LABEL -> exit N: <why>".
attempt() {
    local label="$1" log rc=0
    shift
    log="$(mktemp)"
    timeout "$STEP_TIMEOUT" "$@" >"$log" 2>&1 || rc=$?
    [[ $rc -eq 124 ]] && echo "timed out after ${STEP_TIMEOUT}s" >>"$log"
    if [[ $rc -eq 0 ]]; then
        rm -f "$log"
        return 0
    fi
    echo "install-pwsh: FAILED (exit $rc): $*" >&2
    sed 's/^/install-pwsh:   | /' "$log" | tail -n 15 >&2
    # the first line that says "error" is the cause; else the last line of output
    local why
    why="$(grep -i -m 1 'error\|not found\|timed out' "$log" || grep -v '^\s*$' "$log" | tail -n 1)"
    # without the temporary project's path, which says nothing to the reader
    why="$(echo "$why" | sed -e 's/^\s*//' -e 's|^/[^ ]*restore.csproj : ||')"
    reasons+=("$label -> exit $rc: $why")
    rm -f "$log"
    return $rc
}

# --- PowerShell 7 ---------------------------------------------------------------------------------
PWSH=""
if [[ -x "$PWSH_DIR/pwsh" ]]; then
    PWSH="$PWSH_DIR/pwsh"
elif command -v pwsh >/dev/null 2>&1; then
    PWSH="$(command -v pwsh)"
elif ! command -v dotnet >/dev/null 2>&1; then
    reasons+=("dotnet not found: install the .NET SDK (Debian: packages.microsoft.com dotnet-sdk-8.0) or put pwsh on PATH")
else
    export DOTNET_ROLL_FORWARD=Major DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1
    echo "install-pwsh: dotnet tool install PowerShell --version $PWSH_VERSION --tool-path $PWSH_DIR" >&2
    if attempt "dotnet tool install PowerShell $PWSH_VERSION" dotnet tool install PowerShell --tool-path "$PWSH_DIR" --version "$PWSH_VERSION" \
            && [[ -x "$PWSH_DIR/pwsh" ]]; then
        PWSH="$PWSH_DIR/pwsh"
    fi
fi
if [[ -n "$PWSH" ]]; then
    if ! attempt "$PWSH -Command \$PSVersionTable" env DOTNET_ROLL_FORWARD=Major "$PWSH" -NoLogo -NoProfile -NonInteractive -Command '$PSVersionTable.PSVersion.ToString()'; then
        PWSH=""
    fi
fi

# --- Pester 5 and PSScriptAnalyzer (NuGet packages, restored by a throwaway project) ----------------
find_psd1() { find "$NUGET_DIR" -iname "$1" -path "*/$2*" 2>/dev/null | sort -V | tail -n 1; }
PESTER_PSD1="$(find_psd1 Pester.psd1 pester)"
PSSA_PSD1="$(find_psd1 PSScriptAnalyzer.psd1 psscriptanalyzer)"
if [[ -z "$PESTER_PSD1" || -z "$PSSA_PSD1" ]] && command -v dotnet >/dev/null 2>&1; then
    proj="$(mktemp -d)"
    cat >"$proj/restore.csproj" <<EOF
<Project Sdk="Microsoft.NET.Sdk">
  <PropertyGroup><TargetFramework>netstandard2.0</TargetFramework></PropertyGroup>
  <ItemGroup>
    <PackageDownload Include="Pester" Version="[$PESTER_VERSION]" />
    <PackageDownload Include="PSScriptAnalyzer" Version="[$PSSA_VERSION]" />
  </ItemGroup>
</Project>
EOF
    echo "install-pwsh: dotnet restore (Pester $PESTER_VERSION, PSScriptAnalyzer $PSSA_VERSION) into $NUGET_DIR" >&2
    attempt "dotnet restore Pester $PESTER_VERSION, PSScriptAnalyzer $PSSA_VERSION" dotnet restore "$proj/restore.csproj" --packages "$NUGET_DIR"
    rm -rf "$proj"
    PESTER_PSD1="$(find_psd1 Pester.psd1 pester)"
    PSSA_PSD1="$(find_psd1 PSScriptAnalyzer.psd1 psscriptanalyzer)"
fi
# Pester or PSScriptAnalyzer may already be installed for the pwsh we found (PSGallery, a system image).
if [[ -n "$PWSH" && -z "$PESTER_PSD1" ]]; then
    PESTER_PSD1="$(env DOTNET_ROLL_FORWARD=Major "$PWSH" -NoProfile -NonInteractive -Command \
        '(Get-Module -ListAvailable Pester | Where-Object { $_.Version.Major -ge 5 } | Sort-Object Version -Descending | Select-Object -First 1).Path' 2>/dev/null)"
fi
if [[ -n "$PWSH" && -z "$PSSA_PSD1" ]]; then
    PSSA_PSD1="$(env DOTNET_ROLL_FORWARD=Major "$PWSH" -NoProfile -NonInteractive -Command \
        '(Get-Module -ListAvailable PSScriptAnalyzer | Sort-Object Version -Descending | Select-Object -First 1).Path' 2>/dev/null)"
fi
[[ -z "$PESTER_PSD1" && ${#reasons[@]} -eq 0 ]] && reasons+=("Pester $PESTER_VERSION not found under $NUGET_DIR after restore")

# --- result ---------------------------------------------------------------------------------------
{
    echo "# written by scripts/install-pwsh.sh; source it to find the PowerShell test tools"
    echo "export DOTNET_ROLL_FORWARD=Major"
    echo "STORMATRIX_PWSH='$PWSH'"
    echo "STORMATRIX_PESTER_PSD1='$PESTER_PSD1'"
    echo "STORMATRIX_PSSA_PSD1='$PSSA_PSD1'"
} >"$ENV_FILE"

if [[ -z "$PSSA_PSD1" ]]; then
    echo "install-pwsh: note: PSScriptAnalyzer not available; the analyzer compliance test will be skipped" >&2
fi
if [[ -z "$PWSH" || -z "$PESTER_PSD1" ]]; then
    # one line for `make test`: "Pester 5: not run (pwsh not installed: <this>)"
    (IFS=';'; echo "${reasons[*]}" | sed 's/;/; /g') >"$REASON_FILE"
    echo "install-pwsh: cannot provide PowerShell 7 + Pester 5:" >&2
    for r in "${reasons[@]}"; do echo "install-pwsh:   - $r" >&2; done
    exit $EXIT_CANNOT_INSTALL
fi
rm -f "$REASON_FILE"
echo "install-pwsh: pwsh=$PWSH pester=$PESTER_PSD1 psscriptanalyzer=${PSSA_PSD1:-none}" >&2
exit 0
