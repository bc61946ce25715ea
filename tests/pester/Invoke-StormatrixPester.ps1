#!/usr/bin/env pwsh
# Runs the project's Pester tests (default: tests/pester; tests/pwsh/Invoke-EngineTests.ps1 passes its
# file list when it runs under a real pwsh with Pester 5) and prints Pester's summary line.
# Exit code: 0 all passed, 1 some failed, 2 Pester 5 could not be loaded.
[CmdletBinding()]
param(
    [string[]]$Path = @($PSScriptRoot),
    [string]$PesterPath = $env:STORMATRIX_PESTER_PSD1,
    [string]$AnalyzerPath = $env:STORMATRIX_PSSA_PSD1,
    [ValidateSet('None', 'Normal', 'Detailed', 'Diagnostic')][string]$Verbosity = 'Normal'
)
$ErrorActionPreference = 'Stop'
try {
    if ($PesterPath) {
        Import-Module -Name $PesterPath -Force
    }
    else {
        Import-Module -Name Pester -MinimumVersion 5.0 -Force
    }
}
catch {
    Write-Output "Pester not run: cannot load Pester 5 ($($_.Exception.Message))"
    exit 2
}
if ($AnalyzerPath) {
    # Imported here (NuGet's lower-case folder names do not work through PSModulePath on Linux);
    # the compliance test runs the analyzer when the module is loaded or available.
    try {
        Import-Module -Name $AnalyzerPath -Force
    }
    catch {
        Write-Output "PSScriptAnalyzer not loaded ($($_.Exception.Message)): the analyzer test is skipped"
    }
}
$configuration = New-PesterConfiguration
$configuration.Run.Path = $Path
$configuration.Run.PassThru = $true
$configuration.Output.Verbosity = $Verbosity
$result = Invoke-Pester -Configuration $configuration
Write-Output ("Tests Passed: {0}, Failed: {1}, Skipped: {2}, NotRun: {3}, Total: {4}" -f `
        $result.PassedCount, $result.FailedCount, $result.SkippedCount, $result.NotRunCount, $result.TotalCount)
if ($result.FailedCount -gt 0 -or $result.Result -ne 'Passed') {
    exit 1
}
exit 0
