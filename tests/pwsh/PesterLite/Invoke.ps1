# PesterLite's Invoke-Pester, New-PesterConfiguration and New-PesterContainer: the part of Pester 5's
# programmatic interface that code calling Pester uses (windows/StormatrixGuest's validation runner,
# tests that mock Invoke-Pester). Each container runs in its own engine process through
# Invoke-PesterLiteFile.ps1, and the result has Pester 5's shape: Result, PassedCount, FailedCount,
# SkippedCount, NotRunCount, TotalCount, and Tests with Name, ExpandedName, Path, ExpandedPath, Result,
# ErrorRecord. Partial: container -Data crosses the process boundary as JSON (numbers become Int64,
# objects hashtables); -ScriptBlock containers, code coverage and test result files are not supported.

function New-PesterConfiguration {
    [CmdletBinding()]
    param([System.Collections.IDictionary] $Hashtable)
    $config = [pscustomobject]@{
        Run = [pscustomobject]@{ Path = @('.'); ExcludePath = @(); Container = @(); PassThru = $false; Exit = $false; Throw = $false; SkipRun = $false }
        Filter = [pscustomobject]@{ Tag = @(); ExcludeTag = @(); FullName = @(); Line = @() }
        Output = [pscustomobject]@{ Verbosity = 'Normal' }
        Should = [pscustomobject]@{ ErrorAction = 'Stop' }
        TestResult = [pscustomobject]@{ Enabled = $false; OutputPath = 'testResults.xml' }
        CodeCoverage = [pscustomobject]@{ Enabled = $false }
    }
    foreach ($section in @(if ($Hashtable) { $Hashtable.Keys })) {
        foreach ($key in @($Hashtable[$section].Keys)) { $config.$section.$key = $Hashtable[$section][$key] }
    }
    $config
}

function New-PesterContainer {
    [CmdletBinding(DefaultParameterSetName = 'Path')]
    param(
        [Parameter(Mandatory, ParameterSetName = 'Path')] [string[]] $Path,
        [Parameter(Mandatory, ParameterSetName = 'ScriptBlock')] [scriptblock[]] $ScriptBlock,
        [System.Collections.IDictionary[]] $Data = @(@{})
    )
    if ($PSCmdlet.ParameterSetName -eq 'ScriptBlock') {
        throw [System.NotSupportedException]::new('PesterLite: script block containers are not supported; write the tests to a file')
    }
    foreach ($p in $Path) {
        foreach ($d in $Data) { [pscustomobject]@{ Type = 'File'; Item = [System.IO.Path]::GetFullPath($p); Data = $d } }
    }
}

function Invoke-Pester {
    [CmdletBinding(DefaultParameterSetName = 'Simple')]
    param(
        [Parameter(ParameterSetName = 'Simple', Position = 0)] [string[]] $Path = @('.'),
        [Parameter(ParameterSetName = 'Simple')] [object[]] $Container,
        [Parameter(ParameterSetName = 'Simple')] [switch] $PassThru,
        [Parameter(ParameterSetName = 'Simple')] [string[]] $TagFilter,
        [Parameter(ParameterSetName = 'Simple')] [string[]] $ExcludeTagFilter,
        [Parameter(ParameterSetName = 'Simple')] [ValidateSet('None', 'Normal', 'Detailed', 'Diagnostic', 'Minimal')] [string] $Output = 'Normal',
        [Parameter(ParameterSetName = 'Advanced')] [object] $Configuration
    )
    if ($PSCmdlet.ParameterSetName -eq 'Simple') {
        $Configuration = New-PesterConfiguration
        $Configuration.Run.Path = $Path
        if ($Container) { $Configuration.Run.Container = $Container }
        $Configuration.Run.PassThru = $PassThru.IsPresent
        if ($TagFilter) { $Configuration.Filter.Tag = $TagFilter }
        if ($ExcludeTagFilter) { $Configuration.Filter.ExcludeTag = $ExcludeTagFilter }
        $Configuration.Output.Verbosity = $Output
    }
    $containers = @($Configuration.Run.Container)
    if ($containers.Count -eq 0) {
        foreach ($p in @($Configuration.Run.Path)) {
            $full = [System.IO.Path]::GetFullPath($p)
            $found = if ([System.IO.Directory]::Exists($full)) { [System.IO.Directory]::GetFiles($full, '*.Tests.ps1', 'AllDirectories') | Sort-Object } else { @($full) }
            foreach ($f in $found) { $containers += [pscustomobject]@{ Type = 'File'; Item = $f; Data = @{} } }
        }
    }
    $exe = [System.Environment]::ProcessPath
    $prefix = @()
    if ([System.IO.Path]::GetFileNameWithoutExtension($exe) -eq 'dotnet') { $prefix = @([Stormatrix.PwshHost.StandInSupport].Assembly.Location) }
    $runner = [System.IO.Path]::Combine($PSScriptRoot, 'Invoke-PesterLiteFile.ps1')
    $tests = [System.Collections.Generic.List[object]]::new()
    foreach ($c in $containers) {
        $resultPath = [System.IO.Path]::GetTempFileName()
        $dataPath = [System.IO.Path]::GetTempFileName()
        try {
            [System.IO.File]::WriteAllText($dataPath, (ConvertTo-Json -InputObject ($c.Data ?? @{}) -Depth 10))
            $argv = @($prefix) + @('-NoProfile', '-NonInteractive', '-File', $runner, '-Path', $c.Item, '-ResultPath', $resultPath, '-DataPath', $dataPath)
            if (@($Configuration.Filter.Tag).Count) { $argv += @('-Tag', (@($Configuration.Filter.Tag) -join ',')) }
            if (@($Configuration.Filter.ExcludeTag).Count) { $argv += @('-ExcludeTag', (@($Configuration.Filter.ExcludeTag) -join ',')) }
            $out = & $exe @argv 2>&1
            $text = [System.IO.File]::ReadAllText($resultPath)
            if ($LASTEXITCODE -ne 0 -or -not $text.Trim()) {
                $record = [System.Management.Automation.ErrorRecord]::new([System.Exception]::new("the container $($c.Item) did not run: $(@($out)[-5..-1] -join ' ')"), 'PesterLiteContainerFailed', 'NotSpecified', $c.Item)
                $tests.Add([pscustomobject]@{ Name = $c.Item; ExpandedName = $c.Item; Path = @($c.Item); ExpandedPath = $c.Item; Result = 'Failed'; ErrorRecord = @($record); Duration = [timespan]::Zero })
                continue
            }
            foreach ($r in @(ConvertFrom-Json -InputObject $text)) {
                $errors = @()
                if ($r.Result -eq 'Failed') {
                    $errors = @([System.Management.Automation.ErrorRecord]::new([System.Exception]::new([string]$r.Message), 'PesterAssertionFailed', 'InvalidResult', $r.ErrorLine))
                }
                $names = @(@($r.Blocks) + @($r.Name))
                $tests.Add([pscustomobject]@{ Name = $r.Name; ExpandedName = $r.Name; Path = $names; ExpandedPath = ($names -join '.'); Result = $r.Result
                        ErrorRecord = $errors; Duration = [timespan]::FromMilliseconds([double]$r.Duration); File = $r.File })
            }
        } finally {
            [System.IO.File]::Delete($resultPath)
            [System.IO.File]::Delete($dataPath)
        }
    }
    $passed = @($tests | Where-Object Result -EQ 'Passed').Count
    $failed = @($tests | Where-Object Result -EQ 'Failed').Count
    $skipped = @($tests | Where-Object Result -EQ 'Skipped').Count
    $result = [pscustomobject]@{
        Result = $(if ($failed) { 'Failed' } else { 'Passed' }); PassedCount = $passed; FailedCount = $failed; SkippedCount = $skipped
        NotRunCount = 0; TotalCount = $tests.Count; Tests = $tests.ToArray(); Passed = @($tests | Where-Object Result -EQ 'Passed'); Failed = @($tests | Where-Object Result -EQ 'Failed')
        Skipped = @($tests | Where-Object Result -EQ 'Skipped'); Containers = $containers; Configuration = $Configuration; Executed = $true
    }
    if ($Configuration.Output.Verbosity -ne 'None') {
        foreach ($t in $result.Failed) { [Console]::Out.WriteLine("[-] $($t.ExpandedPath)`n    $(@($t.ErrorRecord)[0].Exception.Message)") }
        [Console]::Out.WriteLine("Tests Passed: $passed, Failed: $failed, Skipped: $skipped, NotRun: 0")
    }
    if ($Configuration.Run.PassThru) { $result }
    if ($Configuration.Run.Throw -and $failed) { throw "Pester run failed: $failed test(s) failed" }
}
