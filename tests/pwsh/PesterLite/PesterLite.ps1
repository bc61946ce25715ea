<#
PesterLite: a Pester-5-compatible test runner for the hosted PowerShell engine (tests/pwsh/host), where
Pester itself cannot be installed. The same *.Tests.ps1 files run under real Pester 5 where it exists.

Why it is dot-sourced, not imported as a module: Pester 5's scoping (the Describe body runs at
discovery; BeforeAll variables are visible in It; BeforeEach, It and AfterEach share one scope) comes
from running the test's script blocks in nested scopes of the tests' own session state. A module's
functions run in the module's session state, so dot-sourcing the test blocks from there would not nest.
Dot-sourced into the runner script (Invoke-PesterLiteFile.ps1), the framework and the tests share one
session state, and each block/test is a function scope nested in its parent's.

Supported (the Pester 5 behaviour the project's tests use): Describe/Context/It with -ForEach/-TestCases
(<name> expansion, $_), -Skip, -Tag; BeforeDiscovery; BeforeAll/AfterAll/BeforeEach/AfterEach; Should
(Should.ps1); Mock, Should -Invoke, InModuleScope (Mock.ps1); $TestDrive and TestDrive:; Set-ItResult.
Partial: -Tag filtering by the runner's -Tag/-ExcludeTag only.
#>

$script:__plPhase = 'None'
$script:__plRoot = $null
$script:__plCurrent = $null
$script:__plCurrentTest = $null
$script:__plBlockStack = [System.Collections.Generic.List[object]]::new()
$script:__plNextId = 0

function __plNewBlock {
    param([string] $Name, [string] $Kind, $Parent, [object] $Data, [bool] $Skip, [string[]] $Tag, [int] $Line)
    $script:__plNextId++
    [pscustomobject]@{
        Id = $script:__plNextId; Kind = $Kind; Name = $Name; Parent = $Parent; Data = $Data; Skip = $Skip
        Tag = @($Tag | Where-Object { $_ }); Line = $Line
        Children = [System.Collections.Generic.List[object]]::new()
        BeforeAll = [System.Collections.Generic.List[scriptblock]]::new()
        AfterAll = [System.Collections.Generic.List[scriptblock]]::new()
        BeforeEach = [System.Collections.Generic.List[scriptblock]]::new()
        AfterEach = [System.Collections.Generic.List[scriptblock]]::new()
        Failures = [System.Collections.Generic.List[object]]::new()
    }
}

function __plExpandName {
    # Pester 5: <key> is replaced by the data item's value, <_> by the item itself
    param([string] $Name, $Data)
    if ($null -eq $Data) { return $Name }
    return [regex]::Replace($Name, '<([^<>]+)>', {
            param($m)
            $key = $m.Groups[1].Value
            if ($key -eq '_') { return [string]$Data }
            if ($Data -is [System.Collections.IDictionary]) {
                if ($Data.Contains($key)) { return [string]$Data[$key] }
                return $m.Value
            }
            $prop = $Data.PSObject.Properties[$key]
            if ($null -ne $prop) { return [string]$prop.Value }
            # Pester also evaluates simple expressions such as <Name.Length>; left as text here
            return $m.Value
        })
}

function __plSetDataVariables {
    # the data item's keys as variables of the calling (dot-sourced) scope, and $_ as the item
    param($Data)
    if ($null -eq $Data) { return }
    $vars = [System.Collections.Generic.List[psvariable]]::new()
    if ($Data -is [System.Collections.IDictionary]) {
        foreach ($k in $Data.Keys) { $vars.Add([psvariable]::new([string]$k, $Data[$k])) }
    }
    $vars.Add([psvariable]::new('_', $Data))
    $vars
}

function __plItems {
    param($ForEach, [bool] $Bound)
    if (-not $Bound) { return , @($null) }
    # an empty -ForEach produces no block/test (Pester 5)
    return , @($ForEach)
}

function __plDiscoverBlock {
    param([string] $Kind, [string] $Name, [scriptblock] $Fixture, $ForEach, [bool] $ForEachBound, [bool] $Skip, [string[]] $Tag, [int] $Line)
    if ($script:__plPhase -ne 'Discovery') {
        throw [System.InvalidOperationException]::new("$Kind '$Name' cannot run inside a test or a setup block (Pester 5 discovers blocks before running them)")
    }
    foreach ($__plItem in (__plItems $ForEach $ForEachBound)) {
        $parent = $script:__plCurrent
        $block = __plNewBlock -Name (__plExpandName $Name $__plItem) -Kind $Kind -Parent $parent -Data $__plItem -Skip ($Skip -or $parent.Skip) -Tag (@($Tag) + @($parent.Tag)) -Line $Line
        $parent.Children.Add($block)
        $script:__plCurrent = $block
        try {
            foreach ($__plVar in (__plSetDataVariables $__plItem)) { $ExecutionContext.SessionState.PSVariable.Set($__plVar) }
            if ($Fixture) { . $Fixture }
        } catch {
            $block.Failures.Add((__plFailure $_ "Discovery of $Kind '$($block.Name)' failed"))
        } finally {
            $script:__plCurrent = $parent
        }
    }
}

function Describe {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory, Position = 0)] [string] $Name,
        [Parameter(Position = 1)] [scriptblock] $Fixture,
        [string[]] $Tag,
        [switch] $Skip,
        [Alias('TestCases')] [object[]] $ForEach
    )
    __plDiscoverBlock 'Describe' $Name $Fixture $ForEach $PSBoundParameters.ContainsKey('ForEach') $Skip.IsPresent $Tag $MyInvocation.ScriptLineNumber
}

function Context {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory, Position = 0)] [string] $Name,
        [Parameter(Position = 1)] [scriptblock] $Fixture,
        [string[]] $Tag,
        [switch] $Skip,
        [Alias('TestCases')] [object[]] $ForEach
    )
    __plDiscoverBlock 'Context' $Name $Fixture $ForEach $PSBoundParameters.ContainsKey('ForEach') $Skip.IsPresent $Tag $MyInvocation.ScriptLineNumber
}

function It {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory, Position = 0)] [string] $Name,
        [Parameter(Position = 1)] [scriptblock] $Test,
        [Alias('TestCases')] [object[]] $ForEach,
        [string[]] $Tag,
        [switch] $Skip,
        [switch] $Pending
    )
    if ($script:__plPhase -ne 'Discovery') { throw [System.InvalidOperationException]::new("It '$Name' cannot run inside another test or a setup block") }
    $parent = $script:__plCurrent
    foreach ($item in (__plItems $ForEach $PSBoundParameters.ContainsKey('ForEach'))) {
        $script:__plNextId++
        # <name> from the test's data, else from the data of the enclosing data-driven blocks
        $expanded = __plExpandName $Name $item
        for ($b = $parent; $null -ne $b -and $expanded -match '<[^<>]+>'; $b = $b.Parent) { $expanded = __plExpandName $expanded $b.Data }
        $parent.Children.Add([pscustomobject]@{
                Id = $script:__plNextId; Kind = 'It'; Name = $expanded; Body = $Test; Data = $item
                Skip = ($Skip.IsPresent -or $Pending.IsPresent -or $parent.Skip -or $null -eq $Test); Tag = @(@($Tag) + @($parent.Tag) | Where-Object { $_ })
                Parent = $parent; Line = $MyInvocation.ScriptLineNumber; Result = 'NotRun'; Message = ''; ErrorLine = ''; Duration = 0
            })
    }
}

function __plSetupBlock {
    param([string] $Which, [scriptblock] $ScriptBlock)
    if ($script:__plPhase -ne 'Discovery') { throw [System.InvalidOperationException]::new("$Which cannot run inside a test or another setup block") }
    $script:__plCurrent.$Which.Add($ScriptBlock)
}

function BeforeAll { param([Parameter(Mandatory, Position = 0)] [scriptblock] $Scriptblock) __plSetupBlock 'BeforeAll' $Scriptblock }
function AfterAll { param([Parameter(Mandatory, Position = 0)] [scriptblock] $Scriptblock) __plSetupBlock 'AfterAll' $Scriptblock }
function BeforeEach { param([Parameter(Mandatory, Position = 0)] [scriptblock] $Scriptblock) __plSetupBlock 'BeforeEach' $Scriptblock }
function AfterEach { param([Parameter(Mandatory, Position = 0)] [scriptblock] $Scriptblock) __plSetupBlock 'AfterEach' $Scriptblock }

function BeforeDiscovery {
    # Runs now; the variables it assigns become script-scope variables of the test file's discovery (as
    # Pester 5, where BeforeDiscovery runs in the file's scope). The names come from its assignments.
    param([Parameter(Mandatory, Position = 0)] [scriptblock] $ScriptBlock)
    . $ScriptBlock
    $__plNames = @($ScriptBlock.Ast.FindAll({
                param($n)
                $n -is [System.Management.Automation.Language.AssignmentStatementAst] -and
                $n.Left -is [System.Management.Automation.Language.VariableExpressionAst] -and
                -not $n.Left.VariablePath.IsDriveQualified -and -not $n.Left.VariablePath.IsScript -and -not $n.Left.VariablePath.IsGlobal
            }, $false) | ForEach-Object { $_.Left.VariablePath.UserPath -replace '^(local|private):', '' } | Sort-Object -Unique)
    foreach ($__plName in $__plNames) {
        $ExecutionContext.SessionState.PSVariable.Set("script:$__plName", $ExecutionContext.SessionState.PSVariable.GetValue($__plName))
    }
}

class PesterLiteSkipException : System.Exception {
    [string] $Kind
    PesterLiteSkipException([string] $kind, [string] $message) : base($message) { $this.Kind = $kind }
}

function Set-ItResult {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory, ParameterSetName = 'Inconclusive')] [switch] $Inconclusive,
        [Parameter(Mandatory, ParameterSetName = 'Pending')] [switch] $Pending,
        [Parameter(Mandatory, ParameterSetName = 'Skipped')] [switch] $Skipped,
        [string] $Because
    )
    throw [PesterLiteSkipException]::new($PSCmdlet.ParameterSetName, $Because)
}

function __plFailure {
    # a failure record: message, and the file:line of the failing statement in the test file
    param([System.Management.Automation.ErrorRecord] $ErrorRecord, [string] $Prefix)
    $ex = $ErrorRecord.Exception
    $line = ''
    if ($ex.Data.Contains('PesterLiteLine')) { $line = $ex.Data['PesterLiteLine'] }
    elseif ($ErrorRecord.InvocationInfo -and $ErrorRecord.InvocationInfo.ScriptName) {
        $line = "$($ErrorRecord.InvocationInfo.ScriptName):$($ErrorRecord.InvocationInfo.ScriptLineNumber)"
    }
    $message = if ($ex -is [System.Management.Automation.MethodInvocationException] -and $ex.InnerException) { $ex.InnerException.Message } else { $ex.Message }
    $id = [string]$ErrorRecord.FullyQualifiedErrorId
    if ($id -and $id.Length -lt 160 -and -not $id.Contains("`n") -and -not $ex.Data.Contains('PesterLiteLine')) {
        $message = "$message (ErrorId: $($ErrorRecord.FullyQualifiedErrorId))"
    }
    if ($Prefix) { $message = "${Prefix}: $message" }
    [pscustomobject]@{ Message = $message; Line = $line; StackTrace = [string]$ErrorRecord.ScriptStackTrace }
}

function __plAllTests {
    param($Block)
    foreach ($c in $Block.Children) {
        if ($c.Kind -eq 'It') { $c } else { __plAllTests $c }
    }
}

function __plTagSelected {
    param($Test, [string[]] $IncludeTag, [string[]] $ExcludeTag)
    foreach ($t in $ExcludeTag) { if ($Test.Tag -contains $t) { return $false } }
    if (-not $IncludeTag) { return $true }
    foreach ($t in $IncludeTag) { if ($Test.Tag -contains $t) { return $true } }
    return $false
}

function __plRunBlock {
    param($__plBlock)
    $__plTests = @(__plAllTests $__plBlock | Where-Object { $_.Result -eq 'NotRun' -and -not $_.Excluded })
    if ($__plTests.Count -eq 0) { return }
    if ($__plBlock.Failures.Count) {
        foreach ($t in $__plTests) { $t.Result = 'Failed'; $t.Message = $__plBlock.Failures[0].Message; $t.ErrorLine = $__plBlock.Failures[0].Line }
        return
    }
    $__plRunnable = @($__plTests | Where-Object { -not $_.Skip })
    foreach ($t in @($__plTests | Where-Object { $_.Skip })) { $t.Result = 'Skipped' }
    if ($__plRunnable.Count -eq 0) { return }
    $script:__plBlockStack.Add($__plBlock)
    $__plOwnDrive = __plEnterTestDrive $__plBlock
    try {
        foreach ($__plVar in (__plSetDataVariables $__plBlock.Data)) { $ExecutionContext.SessionState.PSVariable.Set($__plVar) }
        $__plSetupFailed = $null
        try {
            foreach ($__plSb in $__plBlock.BeforeAll) { . $__plSb }
        } catch {
            $__plSetupFailed = __plFailure $_ 'BeforeAll failed'
        }
        if ($__plSetupFailed) {
            foreach ($t in $__plRunnable) { if ($t.Result -eq 'NotRun') { $t.Result = 'Failed'; $t.Message = $__plSetupFailed.Message; $t.ErrorLine = $__plSetupFailed.Line } }
        } else {
            foreach ($__plChild in $__plBlock.Children) {
                if ($__plChild.Kind -eq 'It') { if ($__plChild.Result -eq 'NotRun' -and -not $__plChild.Excluded) { __plRunTest $__plChild } }
                else { __plRunBlock $__plChild }
            }
        }
        foreach ($__plSb in $__plBlock.AfterAll) {
            try { . $__plSb } catch {
                $f = __plFailure $_ 'AfterAll failed'
                $script:__plExtraFailures.Add([pscustomobject]@{ Path = (__plPath $__plBlock); Message = $f.Message; Line = $f.Line })
            }
        }
    } finally {
        __plRemoveMocks $__plBlock.Id
        __plLeaveTestDrive $__plOwnDrive
        $script:__plBlockStack.RemoveAt($script:__plBlockStack.Count - 1)
    }
}

function __plEachChain {
    param($Block, [string] $Which)
    $chain = [System.Collections.Generic.List[object]]::new()
    for ($b = $Block; $null -ne $b; $b = $b.Parent) { $chain.Insert(0, $b) }
    foreach ($b in $chain) { foreach ($sb in $b.$Which) { $sb } }
}

function __plRunTest {
    param($__plTest)
    $script:__plCurrentTest = $__plTest
    $script:__plPhase = 'Run'
    $__plWatch = [System.Diagnostics.Stopwatch]::StartNew()
    try {
        foreach ($__plVar in (__plSetDataVariables $__plTest.Data)) { $ExecutionContext.SessionState.PSVariable.Set($__plVar) }
        try {
            foreach ($__plSb in (__plEachChain $__plTest.Parent 'BeforeEach')) { . $__plSb }
            $null = . $__plTest.Body
            $__plTest.Result = 'Passed'
        } catch [PesterLiteSkipException] {
            $__plTest.Result = 'Skipped'
            $__plTest.Message = "$($_.Exception.Kind): $($_.Exception.Message)"
        } catch {
            $f = __plFailure $_ ''
            $__plTest.Result = 'Failed'; $__plTest.Message = $f.Message; $__plTest.ErrorLine = $f.Line
        }
        $__plAfter = @(__plEachChain $__plTest.Parent 'AfterEach')
        [array]::Reverse($__plAfter)
        foreach ($__plSb in $__plAfter) {
            try { . $__plSb } catch {
                if ($__plTest.Result -ne 'Failed') {
                    $f = __plFailure $_ 'AfterEach failed'
                    $__plTest.Result = 'Failed'; $__plTest.Message = $f.Message; $__plTest.ErrorLine = $f.Line
                }
            }
        }
    } finally {
        $__plTest.Duration = $__plWatch.Elapsed.TotalMilliseconds
        __plRemoveMocks $__plTest.Id
        $script:__plCurrentTest = $null
        $script:__plPhase = 'Setup'
    }
}

function __plPath {
    param($Node)
    $names = [System.Collections.Generic.List[string]]::new()
    for ($n = $Node; $null -ne $n -and $n.Kind -ne 'Root'; $n = $n.Parent) { $names.Insert(0, $n.Name) }
    $names -join ' > '
}

function __plEnterTestDrive {
    # Pester's $TestDrive and TestDrive: drive: a temporary folder per test file; as in Pester 5, what a
    # Describe/Context (or its tests) adds is removed when that block ends.
    param($Block)
    if ($Block.Kind -ne 'Root') {
        if (-not $global:TestDrive) { return $null }
        $snapshot = [System.Collections.Generic.HashSet[string]]::new([string[]][System.IO.Directory]::GetFileSystemEntries($global:TestDrive, '*', 'AllDirectories'))
        return [pscustomobject]@{ Dir = $global:TestDrive; Snapshot = $snapshot }
    }
    $dir = [System.IO.Path]::Combine([System.IO.Path]::GetTempPath(), 'PesterLite-' + [guid]::NewGuid().ToString('N'))
    $null = [System.IO.Directory]::CreateDirectory($dir)
    $global:TestDrive = $dir
    $provider = $ExecutionContext.SessionState.Provider.GetOne('FileSystem')
    $null = $ExecutionContext.SessionState.Drive.New([System.Management.Automation.PSDriveInfo]::new('TestDrive', $provider, $dir, 'PesterLite TestDrive', $null), 'Global')
    return [pscustomobject]@{ Dir = $dir; Snapshot = $null }
}

function __plLeaveTestDrive {
    param($Drive)
    if (-not $Drive) { return }
    if ($null -ne $Drive.Snapshot) {
        if (-not [System.IO.Directory]::Exists($Drive.Dir)) { return }
        $entries = [System.IO.Directory]::GetFileSystemEntries($Drive.Dir, '*', 'AllDirectories') | Sort-Object -Property Length -Descending
        foreach ($e in $entries) {
            if ($Drive.Snapshot.Contains($e)) { continue }
            try {
                if ([System.IO.Directory]::Exists($e)) { [System.IO.Directory]::Delete($e, $true) } else { [System.IO.File]::Delete($e) }
            } catch { }
        }
        return
    }
    try { $ExecutionContext.SessionState.Drive.Remove('TestDrive', $true, 'Global') } catch { }
    try { [System.IO.Directory]::Delete($Drive.Dir, $true) } catch { }
    $global:TestDrive = $null
}

function Invoke-PesterLiteContainer {
    <# Discovers and runs one test file; returns one result object per test (Path, Name, Result,
    Message, ErrorLine, File, Line, Duration) and per failing AfterAll. #>
    param([Parameter(Mandatory)] [string] $Path, [string[]] $Tag, [string[]] $ExcludeTag, [hashtable] $Data = @{})
    $full = [System.IO.Path]::GetFullPath($Path)
    $script:__plRoot = __plNewBlock -Name ([System.IO.Path]::GetFileName($full)) -Kind 'Root' -Parent $null -Data $null -Skip $false -Tag @() -Line 0
    $script:__plCurrent = $script:__plRoot
    $script:__plExtraFailures = [System.Collections.Generic.List[object]]::new()
    $script:__plPhase = 'Discovery'
    try {
        # a container's -Data binds to the test file's param() block, as in Pester 5
        . $full @Data
    } catch {
        $script:__plRoot.Failures.Add((__plFailure $_ 'Discovery failed'))
    }
    $script:__plPhase = 'Setup'
    $tests = @(__plAllTests $script:__plRoot)
    foreach ($t in $tests) { $t | Add-Member -NotePropertyName Excluded -NotePropertyValue (-not (__plTagSelected $t $Tag $ExcludeTag)) }
    if ($tests.Count -eq 0 -and $script:__plRoot.Failures.Count) {
        $f = $script:__plRoot.Failures[0]
        $script:__plExtraFailures.Add([pscustomobject]@{ Path = '(file)'; Message = $f.Message; Line = $f.Line })
    } else {
        __plRunBlock $script:__plRoot
    }
    foreach ($t in $tests) {
        if ($t.Excluded) { continue }
        $blocks = @((__plPath $t.Parent) -split ' > ' | Where-Object { $_ })
        [pscustomobject]@{ File = $full; Path = (__plPath $t); Name = $t.Name; Blocks = $blocks; Result = $t.Result; Message = $t.Message; ErrorLine = $t.ErrorLine; Line = $t.Line; Duration = $t.Duration }
    }
    foreach ($f in $script:__plExtraFailures) {
        [pscustomobject]@{ File = $full; Path = $f.Path; Name = $f.Path; Blocks = @(); Result = 'Failed'; Message = $f.Message; ErrorLine = $f.Line; Line = 0; Duration = 0 }
    }
}

. ([System.IO.Path]::Combine($PSScriptRoot, 'Should.ps1'))
. ([System.IO.Path]::Combine($PSScriptRoot, 'Mock.ps1'))
. ([System.IO.Path]::Combine($PSScriptRoot, 'Invoke.ps1'))
