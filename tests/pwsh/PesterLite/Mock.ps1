# PesterLite's Mock, Should -Invoke's call history, and InModuleScope.
#
# As Pester 5: a mocked command is shadowed by an alias (aliases win over functions and cmdlets) to a
# generated function with the original's parameters (ProxyCommand.GetParamBlock of its metadata), in
# the tests' scope or, with -ModuleName, in the module's script scope. Each call is recorded; the newest
# behaviour whose -ParameterFilter matches runs, else the newest one without a filter, else the original
# command. Behaviours and the alias end with the block or test that defined them.

$script:__plMockTable = @{}                                           # "module|command" -> mock state
$script:__plCalls = [System.Collections.Generic.List[object]]::new()  # call history

function __plOwnerId {
    if ($script:__plCurrentTest) { return $script:__plCurrentTest.Id }
    if ($script:__plBlockStack.Count) { return $script:__plBlockStack[$script:__plBlockStack.Count - 1].Id }
    return 0
}

function __plModule {
    param([string] $ModuleName)
    $m = @(Get-Module -Name $ModuleName)
    if ($m.Count -eq 0) { throw [System.ArgumentException]::new("No modules named '$ModuleName' are currently loaded.") }
    return $m[0]
}

function InModuleScope {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory, Position = 0)] [string] $ModuleName,
        [Parameter(Mandatory, Position = 1)] [scriptblock] $ScriptBlock,
        [hashtable] $Parameters = @{},
        [object[]] $ArgumentList = @()
    )
    $module = __plModule $ModuleName
    & $module $ScriptBlock @Parameters @ArgumentList
}

function Mock {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory, Position = 0)] [string] $CommandName,
        [Parameter(Position = 1)] [scriptblock] $MockWith = {},
        [switch] $Verifiable,
        [scriptblock] $ParameterFilter,
        [string] $ModuleName,
        [string[]] $RemoveParameterType,
        [string[]] $RemoveParameterValidation
    )
    $key = "$ModuleName|$CommandName"
    $state = $script:__plMockTable[$key]
    if ($null -eq $state) {
        $module = if ($ModuleName) { __plModule $ModuleName } else { $null }
        $resolve = { param($n) @(Get-Command -Name $n -CommandType Function, Cmdlet, Application, ExternalScript -ErrorAction Ignore) }
        $found = if ($module) { & $module $resolve $CommandName } else { & $resolve $CommandName }
        $original = @($found)[0]
        if ($null -eq $original) {
            throw [System.Management.Automation.CommandNotFoundException]::new("Could not find Command $CommandName")
        }
        # an alias (aliases win over functions and cmdlets in every scope) to a generated function: in a
        # module, both in the module's script scope (the module's own stub of the same name stays); in the
        # tests, both global through a small dynamic module, and the function passes calls that come from
        # a module's code on to the original, as Pester leaves those alone without -ModuleName
        $fname = 'PesterLiteMock_' + ($key -replace '[^A-Za-z0-9]', '_')
        $scopePrefix = if ($module) { 'script:' } else { '' }
        $quotedKey = $key -replace "'", "''"
        if ($original.CommandType -eq 'Application') {
            $text = "function $scopePrefix$fname { __plInvokeMock -Key '$quotedKey' -Bound @{} -Arguments `$args -InputItems @(`$input) }"
        } else {
            $meta = [System.Management.Automation.CommandMetadata]::new($original)
            foreach ($p in $RemoveParameterType) { if ($meta.Parameters.ContainsKey($p)) { $meta.Parameters[$p].ParameterType = [object] } }
            foreach ($p in $RemoveParameterValidation) {
                if ($meta.Parameters.ContainsKey($p)) {
                    $keep = @($meta.Parameters[$p].Attributes | Where-Object { $_ -isnot [System.Management.Automation.ValidateArgumentsAttribute] -and $_ -isnot [System.Management.Automation.ValidateEnumeratedArgumentsAttribute] })
                    $meta.Parameters[$p].Attributes.Clear()
                    foreach ($a in $keep) { $meta.Parameters[$p].Attributes.Add($a) }
                }
            }
            $binding = [System.Management.Automation.ProxyCommand]::GetCmdletBindingAttribute($meta)
            $params = [System.Management.Automation.ProxyCommand]::GetParamBlock($meta)
            $text = "function $scopePrefix$fname {`n$binding`nparam($params)`nbegin { `$__plItems = [System.Collections.Generic.List[object]]::new() }`nprocess { if (`$MyInvocation.ExpectingInput) { `$__plItems.Add(`$_) } }`nend { __plInvokeMock -Key '$quotedKey' -Bound `$PSBoundParameters -Arguments @() -InputItems `$__plItems }`n}"
        }
        if ($module) {
            $define = [scriptblock]::Create("$text`n" + '$ExecutionContext.SessionState.InvokeProvider.Item.New("alias:\", $args[0], $null, $args[1], $true) | Out-Null')
            . $module $define $CommandName $fname
            $holder = $null
        } else {
            $body = "$text`n" + '$ExecutionContext.SessionState.InvokeProvider.Item.New("alias:\", $args[0], $null, $args[1], $true) | Out-Null' +
                "`nExport-ModuleMember -Function '$fname' -Alias '$($CommandName -replace "'", "''")'"
            $holder = New-Module -Name "PesterLiteMock.$CommandName" -ScriptBlock ([scriptblock]::Create($body)) -ArgumentList $CommandName, $fname |
                Import-Module -Global -PassThru -Force
        }
        $state = [pscustomobject]@{ Key = $key; Command = $CommandName; Module = $ModuleName; ModuleInfo = $module; Holder = $holder; Original = $original; Function = $fname
            Behaviours = [System.Collections.Generic.List[object]]::new() }
        $script:__plMockTable[$key] = $state
    }
    $state.Behaviours.Add([pscustomobject]@{ Body = $MockWith; Filter = $ParameterFilter; Owner = (__plOwnerId) })
}

function __plRemoveMocks {
    param([int] $OwnerId)
    foreach ($key in @($script:__plMockTable.Keys)) {
        $state = $script:__plMockTable[$key]
        for ($i = $state.Behaviours.Count - 1; $i -ge 0; $i--) { if ($state.Behaviours[$i].Owner -eq $OwnerId) { $state.Behaviours.RemoveAt($i) } }
        if ($state.Behaviours.Count -eq 0) {
            try {
                if ($state.ModuleInfo) {
                    $undefine = [scriptblock]::Create('$ExecutionContext.SessionState.InvokeProvider.Item.Remove("alias:\$($args[0])", $false); $ExecutionContext.SessionState.InvokeProvider.Item.Remove("function:\$($args[1])", $false)')
                    . $state.ModuleInfo $undefine $state.Command $state.Function
                } else {
                    Remove-Module -ModuleInfo $state.Holder -Force
                }
            } catch { }
            $script:__plMockTable.Remove($key)
        }
    }
}

function __plTestFilter {
    # runs a -ParameterFilter with the call's parameters as variables
    param([scriptblock] $__plFilter, [System.Collections.IDictionary] $__plBound, [object[]] $__plArgs)
    if ($null -eq $__plFilter) { return $true }
    foreach ($__plK in $__plBound.Keys) {
        # a parameter named like a read-only automatic variable ($Host) cannot become a variable
        try { $ExecutionContext.SessionState.PSVariable.Set([string]$__plK, $__plBound[$__plK]) } catch [System.Management.Automation.SessionStateUnauthorizedAccessException] { }
    }
    $PesterBoundParameters = $__plBound
    return [bool](. $__plFilter @__plArgs)
}

function global:__plInvokeMock {
    param([string] $Key, [System.Collections.IDictionary] $Bound, [object[]] $Arguments, [object[]] $InputItems)
    $state = $script:__plMockTable[$Key]
    $boundCopy = @{}
    foreach ($k in $Bound.Keys) { $boundCopy[$k] = $Bound[$k] }
    $stack = @($script:__plBlockStack | ForEach-Object { $_.Id })
    $testId = if ($script:__plCurrentTest) { $script:__plCurrentTest.Id } else { 0 }
    $chosen = $null
    for ($i = $state.Behaviours.Count - 1; $i -ge 0; $i--) {
        $b = $state.Behaviours[$i]
        if ($b.Filter -and (__plTestFilter $b.Filter $boundCopy $Arguments)) { $chosen = $b; break }
    }
    if ($null -eq $chosen) {
        for ($i = $state.Behaviours.Count - 1; $i -ge 0; $i--) { if (-not $state.Behaviours[$i].Filter) { $chosen = $state.Behaviours[$i]; break } }
    }
    # without -ModuleName, a call from a module's own code is not the tests' call: Pester leaves it alone
    $fromModule = $false
    if (-not $state.Module) {
        $frames = @([runspace]::DefaultRunspace.Debugger.GetCallStack())
        for ($i = 1; $i -lt $frames.Count; $i++) {
            $f = $frames[$i]
            if ($f.InvocationInfo.MyCommand.Name -eq $state.Function) { continue }
            $fromModule = $null -ne $f.InvocationInfo.MyCommand.Module -and $f.InvocationInfo.MyCommand.Module.Name -notlike 'PesterLiteMock.*'
            break
        }
    }
    if (-not $fromModule) {
        $script:__plCalls.Add([pscustomobject]@{ Key = $Key; Command = $state.Command; Module = $state.Module; Bound = $boundCopy; Arguments = $Arguments; TestId = $testId; Blocks = $stack })
    }
    if ($null -eq $chosen -or $fromModule) {
        # a function's own script block: invoking its FunctionInfo would resolve the name again (to the mock)
        $target = if ($state.Original.CommandType -in 'Function', 'Filter') { $state.Original.ScriptBlock } else { $state.Original }
        if ($InputItems.Count) { $InputItems | & $target @Bound @Arguments } else { & $target @Bound @Arguments }
        return
    }
    __plRunMockBody $chosen.Body $boundCopy $Arguments $InputItems
}

function __plRunMockBody {
    param([scriptblock] $__plBody, [System.Collections.IDictionary] $__plBound, [object[]] $__plArgs, [object[]] $__plInput)
    foreach ($__plK in $__plBound.Keys) {
        # a parameter named like a read-only automatic variable ($Host) cannot become a variable
        try { $ExecutionContext.SessionState.PSVariable.Set([string]$__plK, $__plBound[$__plK]) } catch [System.Management.Automation.SessionStateUnauthorizedAccessException] { }
    }
    $PesterBoundParameters = $__plBound
    if ($__plInput.Count) { $__plInput | . $__plBody @__plArgs } else { . $__plBody @__plArgs }
}

function __plCountCalls {
    param([string] $CommandName, [string] $ModuleName, [scriptblock] $ParameterFilter, [string] $Scope)
    $key = "$ModuleName|$CommandName"
    if (-not $Scope) { $Scope = if ($script:__plCurrentTest) { 'It' } else { 'Describe' } }
    $blockId = $null
    if ($Scope -ne 'It' -and $script:__plBlockStack.Count) {
        # the innermost Describe (or Context) that is running
        for ($i = $script:__plBlockStack.Count - 1; $i -ge 0; $i--) {
            $b = $script:__plBlockStack[$i]
            if ($b.Kind -eq $Scope -or ($Scope -eq 'Describe' -and $b.Kind -eq 'Context' -and $i -eq $script:__plBlockStack.Count - 1) -or $b.Kind -eq 'Root') { $blockId = $b.Id; break }
        }
    }
    $count = 0
    foreach ($c in $script:__plCalls) {
        if ($c.Key -ne $key) { continue }
        if ($Scope -eq 'It') { if (-not $script:__plCurrentTest -or $c.TestId -ne $script:__plCurrentTest.Id) { continue } }
        elseif ($null -ne $blockId -and $c.Blocks -notcontains $blockId) { continue }
        if ($ParameterFilter -and -not (__plTestFilter $ParameterFilter $c.Bound $c.Arguments)) { continue }
        $count++
    }
    return $count
}
