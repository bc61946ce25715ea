<#
.SYNOPSIS
Runs the project's PowerShell tests and prints one summary line.

.DESCRIPTION
On the hosted engine (tests/pwsh/host) or a pwsh without Pester 5, each *.Tests.ps1 file runs under
PesterLite (tests/pwsh/PesterLite) in its own process; every failure is printed (file, test path,
message, line) and finally exactly one line:
    PowerShell engine 7.6.9 (hosted): N passed, M failed, K skipped
Under a real pwsh with Pester 5 the same files run under Pester (tests/pester/Invoke-StormatrixPester.ps1)
and Pester's summary is printed. Exit code: 0 when nothing failed, 1 otherwise.

.PARAMETER Path
Test files or folders (default: tests/pester/*.Tests.ps1 and tests/pwsh/**/*.Tests.ps1).

.PARAMETER Engine
Use PesterLite even where Pester 5 is available.
#>
[CmdletBinding()]
param(
    [Parameter(Position = 0, ValueFromRemainingArguments)] [string[]] $Path,
    [string[]] $Tag = @(),
    [string[]] $ExcludeTag = @(),
    [switch] $Engine,
    [switch] $ShowPassed
)
$ErrorActionPreference = 'Stop'
$root = [System.IO.Path]::GetFullPath([System.IO.Path]::Combine($PSScriptRoot, '..', '..'))
$hosted = $null -ne ('Stormatrix.PwshHost.StandInSupport' -as [type])

$files = [System.Collections.Generic.List[string]]::new()
if (-not $Path) {
    $Path = @([System.IO.Path]::Combine($root, 'tests', 'pester'), [System.IO.Path]::Combine($root, 'tests', 'pwsh'))
}
foreach ($p in $Path) {
    $full = [System.IO.Path]::GetFullPath($p)
    if ([System.IO.Directory]::Exists($full)) {
        $recurse = if ($full.TrimEnd('/', '\') -eq [System.IO.Path]::Combine($root, 'tests', 'pester')) { 'TopDirectoryOnly' } else { 'AllDirectories' }
        foreach ($f in [System.IO.Directory]::GetFiles($full, '*.Tests.ps1', [System.IO.SearchOption]$recurse)) { $files.Add($f) }
    } elseif ([System.IO.File]::Exists($full)) {
        $files.Add($full)
    } else {
        [Console]::Error.WriteLine("Invoke-EngineTests: no such test file or folder: $p")
        exit 2
    }
}
$files.Sort([System.StringComparer]::Ordinal)

if (-not $hosted -and -not $Engine) {
    $pester = @(Get-Module -ListAvailable -Name Pester | Where-Object { $_.Version.Major -ge 5 })
    if ($pester.Count -or $env:STORMATRIX_PESTER_PSD1) {
        & ([System.IO.Path]::Combine($root, 'tests', 'pester', 'Invoke-StormatrixPester.ps1')) -Path $files.ToArray()
        exit $LASTEXITCODE
    }
}

$version = $PSVersionTable.PSVersion.ToString()
$label = if ($hosted) { "PowerShell engine $version (hosted)" } else { "pwsh $version (PesterLite, no Pester 5)" }
$exe = [System.Environment]::ProcessPath
$prefix = @()
# started as `dotnet StormatrixPwshHost.dll` rather than through its apphost: name the dll again
if ($hosted -and [System.IO.Path]::GetFileNameWithoutExtension($exe) -eq 'dotnet') { $prefix = @([Stormatrix.PwshHost.StandInSupport].Assembly.Location) }
$runner = [System.IO.Path]::Combine($PSScriptRoot, 'PesterLite', 'Invoke-PesterLiteFile.ps1')

$passed = 0; $failed = 0; $skipped = 0
$clock = [System.Diagnostics.Stopwatch]::StartNew()
foreach ($file in $files) {
    $resultPath = [System.IO.Path]::GetTempFileName()
    try {
        $argv = @($prefix) + @('-NoLogo', '-NoProfile', '-NonInteractive', '-File', $runner, '-Path', $file, '-ResultPath', $resultPath)
        if ($Tag) { $argv += @('-Tag', ($Tag -join ',')) }
        if ($ExcludeTag) { $argv += @('-ExcludeTag', ($ExcludeTag -join ',')) }
        $output = & $exe @argv 2>&1 | ForEach-Object { [string]$_ }
        $code = $LASTEXITCODE
        $text = [System.IO.File]::ReadAllText($resultPath)
        $relative = [System.IO.Path]::GetRelativePath($root, $file)
        if ($code -ne 0 -or -not $text.Trim()) {
            $failed++
            [Console]::Out.WriteLine("[-] ${relative}: the test file did not run to the end (exit $code):")
            foreach ($line in @($output | Select-Object -Last 30)) { [Console]::Out.WriteLine("      $line") }
            continue
        }
        foreach ($r in @(ConvertFrom-Json -InputObject $text)) {
            switch ($r.Result) {
                'Passed' { $passed++; if ($ShowPassed) { [Console]::Out.WriteLine("[+] ${relative}: $($r.Path)") } }
                'Skipped' { $skipped++ }
                default {
                    $failed++
                    [Console]::Out.WriteLine("[-] ${relative}: $($r.Path)")
                    [Console]::Out.WriteLine("      $($r.Message)")
                    if ($r.ErrorLine) { [Console]::Out.WriteLine("      at $($r.ErrorLine)") }
                }
            }
        }
    } finally {
        [System.IO.File]::Delete($resultPath)
    }
}
if ($env:STORMATRIX_ENGINE_TESTS_TIMING) { [Console]::Out.WriteLine("($($files.Count) files in $([int]$clock.Elapsed.TotalSeconds) s)") }
[Console]::Out.WriteLine("${label}: $passed passed, $failed failed, $skipped skipped")
if ($failed -gt 0) { exit 1 }
exit 0
