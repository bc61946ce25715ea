# Tests of the PesterLite runner itself: it runs the samples in Samples/ in a child process (as
# Invoke-EngineTests.ps1 does) and checks each test's verdict and message, so a runner that reported a
# failing test as passed, or a skipped one as run, fails here.

BeforeAll {
    $script:exe = [System.Environment]::ProcessPath
    $script:prefix = @()
    if ([System.IO.Path]::GetFileNameWithoutExtension($script:exe) -eq 'dotnet') {
        $script:prefix = @([Stormatrix.PwshHost.StandInSupport].Assembly.Location)
    }
    function script:Start-Sample {
        # starts PesterLite on one sample in its own process (all samples start at once, in BeforeAll)
        param([string] $Name)
        # outside TestDrive: the samples run while blocks come and go, and a block's TestDrive additions go with it
        $result = Join-Path $script:resultDir "$Name.json"
        $psi = [System.Diagnostics.ProcessStartInfo]::new($script:exe)
        $argv = @($script:prefix) + @('-NoProfile', '-NonInteractive', '-File', (Join-Path $PSScriptRoot 'Invoke-PesterLiteFile.ps1'),
            '-Path', (Join-Path $PSScriptRoot "Samples/$Name.Sample.ps1"), '-ResultPath', $result)
        foreach ($a in $argv) { $psi.ArgumentList.Add($a) }
        $psi.UseShellExecute = $false
        $psi.RedirectStandardOutput = $true
        $psi.RedirectStandardError = $true
        $p = [System.Diagnostics.Process]::Start($psi)
        [pscustomobject]@{ Name = $Name; Process = $p; Out = $p.StandardOutput.ReadToEndAsync(); Err = $p.StandardError.ReadToEndAsync(); Result = $result }
    }
    function script:Invoke-Sample {
        # the sample's results by test name
        param([string] $Name)
        $run = $script:samples[$Name]
        $run.Process.WaitForExit()
        if ($run.Process.ExitCode -ne 0) { throw "PesterLite exited $($run.Process.ExitCode) on $Name`: $($run.Out.Result)$($run.Err.Result)" }
        $map = @{}
        foreach ($r in @(Get-Content -LiteralPath $run.Result -Raw | ConvertFrom-Json)) { $map[($r.Path -split ' > ')[-1]] = $r }
        $map
    }
    $script:resultDir = Join-Path ([System.IO.Path]::GetTempPath()) ('pesterlite-tests-' + [guid]::NewGuid().ToString('N'))
    $null = New-Item -ItemType Directory -Path $script:resultDir -Force
    $script:samples = @{}
    foreach ($n in 'Mixed', 'Scoping', 'Mock', 'Failures', 'Should') { $script:samples[$n] = Start-Sample $n }
}

AfterAll {
    foreach ($run in $script:samples.Values) { if (-not $run.Process.HasExited) { $run.Process.Kill($true) } }
    Remove-Item -LiteralPath $script:resultDir -Recurse -Force -ErrorAction SilentlyContinue
}

Describe 'PesterLite verdicts' {
    BeforeAll { $script:mixed = Invoke-Sample 'Mixed' }
    It 'Should report a passing test as passed' { $script:mixed['passes'].Result | Should -Be 'Passed' }
    It 'Should report a failing test as failed, with the message and the line of the Should' {
        $r = $script:mixed['fails']
        $r.Result | Should -Be 'Failed'
        $r.Message | Should -Be 'Expected 3, but got 2.'
        $r.ErrorLine | Should -BeLike '*Mixed.Sample.ps1:6'
    }
    It 'Should report -Skip and Set-ItResult -Skipped as skipped and not run them' {
        $script:mixed['is skipped'].Result | Should -Be 'Skipped'
        $script:mixed['skips itself'].Result | Should -Be 'Skipped'
    }
}

Describe 'PesterLite scoping' {
    BeforeAll { $script:scoping = Invoke-Sample 'Scoping' }
    It 'Should pass every scoping sample (<_>)' -ForEach @(
        'sees BeforeAll variables of the file and the block', 'shares a scope between BeforeEach and It',
        'does not see variables set by the Describe body at discovery', 'does not see a variable another test set',
        'still does not see it', 'sees the outer BeforeAll from the inner one', 'runs one with its data', 'runs two with its data',
        'accepts -TestCases too: x', 'sees the block data: alpha', 'has a TestDrive folder', 'keeps the block''s file and drops the inner block''s one') {
        $r = $script:scoping[$_]
        $r | Should -Not -BeNullOrEmpty -Because "the sample defines '$_'"
        $r.Result | Should -Be 'Passed' -Because $r.Message
    }
    It 'Should expand <name> in block names from -ForEach data' {
        @($script:scoping.Values | Where-Object { $_.Path -like 'Block alpha from data > *' }).Count | Should -Be 1
    }
}

Describe 'PesterLite mocks' {
    BeforeAll { $script:mocks = Invoke-Sample 'Mock' }
    It 'Should pass every mock sample (<_>)' -ForEach @(
        'replaces a command for the test', 'is gone in the next test', 'picks the behaviour whose -ParameterFilter matches, else the default',
        'calls the original when no behaviour matches', 'gives the mock body the call''s parameters', 'mocks inside a module with -ModuleName',
        'leaves the module alone once the test is over', 'counts zero calls with -Exactly -Times 0', 'mocks a cmdlet stand-in or cmdlet too',
        'drops a parameter''s type and validation when asked',
        'applies to the first test', 'applies to the second test, and counts per test', 'runs in the module and sees its private functions', 'passes -Parameters') {
        $r = $script:mocks[$_]
        $r | Should -Not -BeNullOrEmpty -Because "the sample defines '$_'"
        $r.Result | Should -Be 'Passed' -Because $r.Message
    }
}

Describe 'PesterLite failures' {
    BeforeAll { $script:failures = Invoke-Sample 'Failures' }
    It 'Should name the outcome of every sample test correctly' {
        foreach ($name in $script:failures.Keys) {
            $want = ($name -split ' ')[0]
            $script:failures[$name].Result | Should -Be ($want.Substring(0, 1).ToUpper() + $want.Substring(1)) -Because "'$name' ($($script:failures[$name].Message))"
        }
        $script:failures.Count | Should -Be 14
    }
    It 'Should carry the BeforeAll error to the block''s tests' {
        $script:failures['failed by BeforeAll 1'].Message | Should -BeLike '*setup broke*'
    }
    It 'Should say what Should -Invoke expected' {
        $script:failures['failed by Should -Invoke'].Message | Should -BeLike '*Probe*at least 1*called 0 times*'
    }
}

Describe 'PesterLite Should operators' {
    BeforeAll { $script:should = Invoke-Sample 'Should' }
    It 'Should give each operator the verdict its name says' {
        $script:should.Count | Should -BeGreaterThan 30
        foreach ($name in $script:should.Keys) {
            $want = if ($name.StartsWith('passed')) { 'Passed' } else { 'Failed' }
            $script:should[$name].Result | Should -Be $want -Because "'$name' ($($script:should[$name].Message))"
        }
    }
    It 'Should put -Because in the failure message' {
        $script:should['failed: Because in the message'].Message | Should -BeLike '*because the reason is shown*'
    }
}

# PesterLite's own Invoke-Pester; under real Pester this would be a nested Pester run instead
Describe 'PesterLite Invoke-Pester' -Skip:(-not (Get-Command -Name __plRunBlock -ErrorAction Ignore)) {
    It 'Should run a container with data in its own process and answer in Pester 5''s shape' {
        $configuration = New-PesterConfiguration
        $configuration.Run.Container = New-PesterContainer -Path (Join-Path $PSScriptRoot 'Samples/Data.Sample.ps1') -Data @{ Greeting = 'hello'; Count = 3 }
        $configuration.Run.PassThru = $true
        $configuration.Output.Verbosity = 'None'
        $r = Invoke-Pester -Configuration $configuration
        $r.Result | Should -Be 'Failed'
        $r.PassedCount | Should -Be 1
        $r.FailedCount | Should -Be 1
        ($r.Tests | Where-Object ExpandedName -EQ 'has the data').Result | Should -Be 'Passed'
        $failedTest = $r.Tests | Where-Object Result -EQ 'Failed'
        $failedTest.ExpandedPath | Should -Be 'Data.fails on purpose'
        @($failedTest.ErrorRecord)[0].Exception.Message | Should -Be 'Expected 4, but got 3.'
    }
}
