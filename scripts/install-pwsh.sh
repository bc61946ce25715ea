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

# --- ReadyToRun: compile pwsh's own assemblies ahead of time ---------------------------------------
# The .NET tool package ships PowerShell's assemblies as IL only, so every pwsh start JIT-compiles the
# engine (~1.5 s of CPU per start; the tests start pwsh thousands of times: every WinRM command of the
# fake Windows guest, every VMware backend call, every Pester run). crossgen2 (NuGet, the version of the
# .NET runtime pwsh runs on) compiles the assemblies a start loads into ReadyToRun images, as Microsoft's
# own PowerShell archives ship them: the same IL of the same 7.6.9 with native code beside it, about half
# the CPU of a start. Optional: when it cannot be done the IL-only pwsh stays (correct, slower) and a
# warning says why. STORMATRIX_PWSH_READYTORUN=0 skips it.
R2R_ASSEMBLIES=(System.Management.Automation pwsh Microsoft.PowerShell.ConsoleHost
    Microsoft.PowerShell.Commands.Utility Microsoft.PowerShell.Commands.Management Microsoft.PowerShell.Security
    Microsoft.PowerShell.MarkdownRender Newtonsoft.Json Microsoft.ApplicationInsights
    runtimes/unix/lib/netstandard1.6/Microsoft.Management.Infrastructure)

# r2r_warn MESSAGE: say why pwsh stays IL-only (the install itself still succeeds)
r2r_warn() {
    echo "install-pwsh: WARNING: pwsh stays IL-only (slower starts): $*" >&2
}

readytorun() {
    local app want runtime fw arch rid crossgen work name log proj
    local marker="$PWSH_DIR/.readytorun"
    app="$(ls -d "$PWSH_DIR/.store/powershell/$PWSH_VERSION/powershell/$PWSH_VERSION/tools"/net*/any/unix 2>/dev/null | head -n 1)"
    if [[ -z "$app" || ! -f "$app/pwsh.runtimeconfig.json" ]]; then
        r2r_warn "no unix/pwsh.runtimeconfig.json under $PWSH_DIR/.store"
        return
    fi
    # the runtime pwsh rolls forward to: the newest installed patch of its framework's major.minor
    want="$(sed -n 's/.*"version": *"\([0-9]*\.[0-9]*\)\..*/\1/p' "$app/pwsh.runtimeconfig.json" | head -n 1)"
    runtime="$(dotnet --list-runtimes 2>/dev/null | sed -n "s/^Microsoft\.NETCore\.App \($want\.[0-9]*\) \[\(.*\)\]\$/\1 \2/p" | sort -V | tail -n 1)"
    if [[ -z "$want" || -z "$runtime" ]]; then
        r2r_warn "no Microsoft.NETCore.App ${want:-?} runtime in 'dotnet --list-runtimes'"
        return
    fi
    fw="${runtime#* }/${runtime%% *}"
    runtime="${runtime%% *}"
    [[ "$(cat "$marker" 2>/dev/null)" == "$runtime" ]] && return
    case "$(uname -m)" in
        x86_64) arch=x64 ;;
        aarch64) arch=arm64 ;;
        *) r2r_warn "no crossgen2 for $(uname -m)"; return ;;
    esac
    rid="linux-$arch"
    crossgen="$NUGET_DIR/microsoft.netcore.app.crossgen2.$rid/$runtime/tools/crossgen2"
    if [[ ! -x "$crossgen" ]]; then
        proj="$(mktemp -d)"
        printf '%s\n' '<Project Sdk="Microsoft.NET.Sdk">' \
            '  <PropertyGroup><TargetFramework>netstandard2.0</TargetFramework></PropertyGroup>' \
            "  <ItemGroup><PackageDownload Include=\"Microsoft.NETCore.App.Crossgen2.$rid\" Version=\"[$runtime]\" /></ItemGroup>" \
            '</Project>' >"$proj/restore.csproj"
        echo "install-pwsh: dotnet restore (PackageDownload Microsoft.NETCore.App.Crossgen2.$rid $runtime) --packages $NUGET_DIR" >&2
        timeout "$STEP_TIMEOUT" dotnet restore "$proj/restore.csproj" --packages "$NUGET_DIR" >"$proj/log" 2>&1
        if [[ ! -x "$crossgen" ]]; then
            r2r_warn "the restore of crossgen2 $runtime failed: $(tail -n 3 "$proj/log" | tr '\n' ' ')"
            rm -rf "$proj"
            return
        fi
        rm -rf "$proj"
    fi
    echo "install-pwsh: crossgen2 $runtime: ReadyToRun images of pwsh's assemblies" >&2
    work="$(mktemp -d)"
    log="$work/crossgen.log"
    for name in "${R2R_ASSEMBLIES[@]}"; do
        [[ -f "$app/$name.dll" ]] || continue
        mkdir -p "$work/new/$(dirname "$name")" "$work/old/$(dirname "$name")"
        if ! timeout "$STEP_TIMEOUT" "$crossgen" "$app/$name.dll" -o "$work/new/$name.dll" -r "$fw/*.dll" \
                -r "$app/*.dll" --targetos linux --targetarch "$arch" -O >>"$log" 2>&1; then
            r2r_warn "crossgen2 failed on $name.dll: $(tail -n 3 "$log" | tr '\n' ' ')"
            rm -rf "$work"
            return
        fi
    done
    # swap the images in by rename (a pwsh running meanwhile keeps the file it mapped); put the IL back if
    # the compiled pwsh does not start and name its version
    for name in "${R2R_ASSEMBLIES[@]}"; do
        [[ -f "$work/new/$name.dll" ]] || continue
        cp -p "$app/$name.dll" "$work/old/$name.dll" && cp "$work/new/$name.dll" "$app/$name.dll.r2r" \
            && mv -f "$app/$name.dll.r2r" "$app/$name.dll"
    done
    if [[ "$(timeout 120 "$PWSH" -NoLogo -NoProfile -NonInteractive -Command '$PSVersionTable.PSVersion.ToString()' 2>&1)" != "$PWSH_VERSION" ]]; then
        for name in "${R2R_ASSEMBLIES[@]}"; do
            [[ -f "$work/old/$name.dll" ]] && cp -p "$work/old/$name.dll" "$app/$name.dll.il" \
                && mv -f "$app/$name.dll.il" "$app/$name.dll"
        done
        r2r_warn "the compiled pwsh did not report $PWSH_VERSION; the IL assemblies are back"
        rm -rf "$work"
        return
    fi
    echo "$runtime" >"$marker"
    rm -rf "$work"
}
if [[ "${STORMATRIX_PWSH_READYTORUN:-1}" != "0" ]]; then
    readytorun
fi

{
    echo "# written by scripts/install-pwsh.sh; source it to find the PowerShell test tools"
    echo "STORMATRIX_PWSH='$PWSH'"
    echo "STORMATRIX_PESTER_PSD1='$PESTER_PSD1'"
} >"$ENV_FILE"
echo "install-pwsh: PowerShell $PWSH_VERSION ($PWSH), Pester $PESTER_VERSION ($PESTER_PSD1)" >&2
exit 0
