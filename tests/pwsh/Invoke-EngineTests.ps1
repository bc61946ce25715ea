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

.PARAMETER Timing
Print each file's run time (seconds from its process start until its results were read).

.PARAMETER FileTimeoutSeconds
A test file still running after this long is stopped and counted as one failure (default 900).

.PARAMETER Jobs
How many test files run at once (default: the processor count, at most 4).
#>
[CmdletBinding()]
param(
    [Parameter(Position = 0, ValueFromRemainingArguments)] [string[]] $Path,
    [string[]] $Tag = @(),
    [string[]] $ExcludeTag = @(),
    [switch] $Engine,
    [switch] $ShowPassed,
    [switch] $Timing,
    [ValidateRange(1, 86400)] [int] $FileTimeoutSeconds = 900,
    [ValidateRange(1, 64)] [int] $Jobs = [Math]::Max(1, [Math]::Min(4, [Environment]::ProcessorCount))
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

function Start-TestFile {
    # one engine process per file; its output is read asynchronously so that a full pipe cannot block it
    param([string] $File)
    $resultPath = [System.IO.Path]::GetTempFileName()
    $psi = [System.Diagnostics.ProcessStartInfo]::new($exe)
    $argv = @($prefix) + @('-NoLogo', '-NoProfile', '-NonInteractive', '-File', $runner, '-Path', $File, '-ResultPath', $resultPath)
    if ($Tag) { $argv += @('-Tag', ($Tag -join ',')) }
    if ($ExcludeTag) { $argv += @('-ExcludeTag', ($ExcludeTag -join ',')) }
    foreach ($a in $argv) { $psi.ArgumentList.Add($a) }
    $psi.UseShellExecute = $false
    $psi.RedirectStandardOutput = $true
    $psi.RedirectStandardError = $true
    $psi.RedirectStandardInput = $true
    $p = [System.Diagnostics.Process]::Start($psi)
    $p.StandardInput.Close()
    [pscustomobject]@{ File = $File; Clock = [System.Diagnostics.Stopwatch]::StartNew(); Process = $p; Out = $p.StandardOutput.ReadToEndAsync(); Err = $p.StandardError.ReadToEndAsync(); ResultPath = $resultPath }
}

function Receive-TestFile {
    param($Run)
    $left = [Math]::Max(0, $FileTimeoutSeconds * 1000 - [int]$Run.Clock.Elapsed.TotalMilliseconds)
    if (-not $Run.Process.WaitForExit($left)) {
        $Run.Process.Kill($true)
        $Run.Process.WaitForExit()
        $script:failed++
        [Console]::Out.WriteLine("[-] $([System.IO.Path]::GetRelativePath($root, $Run.File)): stopped after $FileTimeoutSeconds s (-FileTimeoutSeconds)")
        [System.IO.File]::Delete($Run.ResultPath)
        return
    }
    $Run.Process.WaitForExit()
    $code = $Run.Process.ExitCode
    $output = ($Run.Out.Result + $Run.Err.Result) -split "`r?`n"
    $text = [System.IO.File]::ReadAllText($Run.ResultPath)
    [System.IO.File]::Delete($Run.ResultPath)
    $relative = [System.IO.Path]::GetRelativePath($root, $Run.File)
    if ($Timing) { [Console]::Out.WriteLine(('{0,6:0.0} s  {1}' -f $times[$Run.File], $relative)) }
    if ($code -ne 0 -or -not $text.Trim()) {
        $script:failed++
        [Console]::Out.WriteLine("[-] ${relative}: the test file did not run to the end (exit $code):")
        foreach ($line in @($output | Where-Object { $_ } | Select-Object -Last 30)) { [Console]::Out.WriteLine("      $line") }
        return
    }
    foreach ($r in @(ConvertFrom-Json -InputObject $text)) {
        switch ($r.Result) {
            'Passed' { $script:passed++; if ($ShowPassed) { [Console]::Out.WriteLine("[+] ${relative}: $($r.Path)") } }
            'Skipped' { $script:skipped++ }
            default {
                $script:failed++
                [Console]::Out.WriteLine("[-] ${relative}: $($r.Path)")
                [Console]::Out.WriteLine("      $($r.Message)")
                if ($r.ErrorLine) { [Console]::Out.WriteLine("      at $($r.ErrorLine)") }
            }
        }
    }
}

# up to -Jobs files at once, the longest first (by the last run's times, kept in .tools/), so that the
# workers finish together; results are printed in file order as soon as they are in
$timesPath = [System.IO.Path]::Combine($root, '.tools', 'engine-test-times.json')
$times = @{}
try { $known = ConvertFrom-Json -InputObject ([System.IO.File]::ReadAllText($timesPath)) -AsHashtable; foreach ($k in $known.Keys) { $times[$k] = [double]$known[$k] } } catch { }
$order = @($files | Sort-Object -Property @{ Expression = { if ($times.ContainsKey($_)) { $times[$_] } else { [double]::MaxValue } }; Descending = $true })
$started = @{}
$done = @{}
$queue = [System.Collections.Generic.Queue[string]]::new([string[]]$order)
$printed = 0
while ($printed -lt $files.Count) {
    while ($queue.Count -and @($started.Values | Where-Object { -not $done.ContainsKey($_.File) }).Count -lt $Jobs) {
        $f = $queue.Dequeue()
        $started[$f] = Start-TestFile $f
    }
    foreach ($run in @($started.Values)) {
        if (-not $done.ContainsKey($run.File) -and ($run.Process.HasExited -or $run.Clock.Elapsed.TotalSeconds -ge $FileTimeoutSeconds)) {
            $done[$run.File] = $run
            $times[$run.File] = [Math]::Round($run.Clock.Elapsed.TotalSeconds, 1)
        }
    }
    while ($printed -lt $files.Count -and $done.ContainsKey($files[$printed])) {
        Receive-TestFile $done[$files[$printed]]
        $printed++
    }
    if ($printed -lt $files.Count) { [System.Threading.Thread]::Sleep(50) }
}
try {
    $null = [System.IO.Directory]::CreateDirectory([System.IO.Path]::GetDirectoryName($timesPath))
    [System.IO.File]::WriteAllText($timesPath, (ConvertTo-Json -InputObject $times -Compress))
} catch { }
if ($Timing) { [Console]::Out.WriteLine("($($files.Count) files in $([int]$clock.Elapsed.TotalSeconds) s, $Jobs at a time)") }
[Console]::Out.WriteLine("${label}: $passed passed, $failed failed, $skipped skipped")
if ($failed -gt 0) { exit 1 }
exit 0
