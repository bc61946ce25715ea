#!/usr/bin/env pwsh
<#
.SYNOPSIS
Runs the project's PowerShell tests under Pester 5 and ends with Pester's own summary line.

.DESCRIPTION
Every *.Tests.ps1 under tests/pester and tests/pwsh (or the files and folders given) runs under the
Pester that scripts/install-pwsh.sh restored (STORMATRIX_PESTER_PSD1, from .tools/env.sh), on the pwsh
that runs this script. Output is plain text when it is redirected (no ANSI colour in logs). The last line
is Pester's: "Tests Passed: N, Failed: M, Skipped: K, Inconclusive: 0, NotRun: 0".

Exit code: 0 when every test passed, 1 when one failed (or a test file could not run), 2 when Pester 5
cannot be loaded.

.PARAMETER Path
Test files or folders (default: tests/pester and tests/pwsh).

.PARAMETER PesterPath
Pester.psd1 to import (default: $env:STORMATRIX_PESTER_PSD1; else the newest Pester 5 installed).

.PARAMETER Tag
Run only the tests with one of these tags.

.PARAMETER Verbosity
Pester's Output.Verbosity (default Normal: failures, and one line per file).

.EXAMPLE
.tools/pwsh/pwsh -NoProfile -File tests/pester/Invoke-StormatrixPester.ps1 tests/pester/Compliance.Tests.ps1
#>
[CmdletBinding()]
param(
    [Parameter(Position = 0, ValueFromRemainingArguments)][string[]]$Path,
    [string]$PesterPath = $env:STORMATRIX_PESTER_PSD1,
    [string[]]$Tag = @(),
    [ValidateSet('None', 'Normal', 'Detailed', 'Diagnostic')][string]$Verbosity = 'Normal'
)
$ErrorActionPreference = 'Stop'
$root = [System.IO.Path]::GetFullPath([System.IO.Path]::Combine($PSScriptRoot, '..', '..'))
if (-not $Path) { $Path = @($PSScriptRoot, [System.IO.Path]::Combine($root, 'tests', 'pwsh')) }
foreach ($p in $Path) {
    if (-not (Test-Path -LiteralPath $p)) {
        [Console]::Error.WriteLine("Invoke-StormatrixPester: no such test file or folder: $p")
        exit 2
    }
}
try {
    if ($PesterPath) { Import-Module -Name $PesterPath -Force }
    else { Import-Module -Name Pester -MinimumVersion 5.0 -Force }
}
catch {
    [Console]::Error.WriteLine("Invoke-StormatrixPester: cannot load Pester 5 ($($_.Exception.Message)); run bash scripts/install-pwsh.sh")
    exit 2
}
if ([Console]::IsOutputRedirected) { $PSStyle.OutputRendering = 'PlainText' }
$configuration = New-PesterConfiguration
$configuration.Run.Path = [string[]]$Path
$configuration.Run.PassThru = $true
$configuration.Output.Verbosity = $Verbosity
if ([Console]::IsOutputRedirected) { $configuration.Output.RenderMode = 'Plaintext' }
if ($Tag) { $configuration.Filter.Tag = $Tag }
$result = Invoke-Pester -Configuration $configuration
if ($result.Result -ne 'Passed') { exit 1 }
exit 0
