<#
Stand-ins for the Microsoft.PowerShell.Utility / Microsoft.PowerShell.Management cmdlets that the
project's PowerShell uses and that the hosted engine (System.Management.Automation 7.6.9 from NuGet,
tests/pwsh/host) lacks. The host dot-sources this file before the user's code runs.

Each stand-in is an advanced function with the real cmdlet's parameter names, sets, aliases and pipeline
behaviour that the code relies on, written over the same engine or .NET call the real cmdlet makes
(provider intrinsics for the item/path cmdlets, Newtonsoft.Json for the JSON cmdlets, ...). Where one is
partial, its comment says so. A function is defined only when Get-Command finds no real cmdlet of that
name, so under a real pwsh none is loaded (and a real pwsh never dot-sources this file anyway).

$global:StormatrixStandIns lists the names that were defined (tests/pwsh/StandIns.Tests.ps1 checks that
every cmdlet the code uses is either in the engine or here, and that every stand-in is used).
#>
$__standInFiles = @('Streams.ps1', 'Paths.ps1', 'Items.ps1', 'Content.ps1', 'Objects.ps1', 'Sort.ps1', 'Json.ps1', 'Misc.ps1')

function __StandInCallerPreference {
    <# The preference variables of the stand-in's caller, as a real cmdlet would see them.

    A compiled cmdlet reads $ErrorActionPreference etc. from the caller's scope; a function defined here
    (global session state) would not see a value that a module function set locally. The debugger's call
    stack has the caller's frame: frame 0 is this helper, frame 1 the stand-in, 2 the caller; walking
    outward approximates PowerShell's dynamic scoping. Partial: frames of other session states are also
    walked (a module function's caller may provide a value the module would not see). #>
    param([System.Collections.IDictionary] $Bound)
    $frames = @([runspace]::DefaultRunspace.Debugger.GetCallStack())
    $names = @{
        ErrorActionPreference = 'ErrorAction'; WarningPreference = 'WarningAction'; VerbosePreference = 'Verbose'
        DebugPreference = 'Debug'; InformationPreference = 'InformationAction'; ProgressPreference = ''
        WhatIfPreference = 'WhatIf'; ConfirmPreference = 'Confirm'
    }
    $found = @{}
    for ($i = 2; $i -lt $frames.Count -and $found.Count -lt $names.Count; $i++) {
        $vars = $frames[$i].GetFrameVariables()
        foreach ($n in $names.Keys) {
            if (-not $found.ContainsKey($n) -and $vars.ContainsKey($n)) { $found[$n] = $vars[$n].Value }
        }
    }
    foreach ($n in @($found.Keys)) {
        $common = $names[$n]
        if ($common -and $Bound.ContainsKey($common)) { continue }
        [System.Management.Automation.PSVariable]::new($n, $found[$n])
    }
}

foreach ($__f in $__standInFiles) {
    . ([System.IO.Path]::Combine($PSScriptRoot, $__f))
}

# keep a stand-in only where no real cmdlet of that name exists (GetCmdlet asks the session state's
# cmdlet table directly: no Get-Command listing, which would scan the module path)
$global:StormatrixStandIns = [System.Collections.Generic.List[string]]::new()
foreach ($__c in @($ExecutionContext.SessionState.InvokeProvider.ChildItem.Get('function:', $false))) {
    if ($null -eq $__c.ScriptBlock.File -or -not $__c.ScriptBlock.File.StartsWith($PSScriptRoot)) { continue }
    if ($__c.Name.StartsWith('__')) { continue }
    if ($null -ne $ExecutionContext.InvokeCommand.GetCmdlet($__c.Name)) {
        $ExecutionContext.SessionState.InvokeProvider.Item.Remove("function:\$($__c.Name)", $false)
    } else {
        $global:StormatrixStandIns.Add($__c.Name)
    }
}
$global:StormatrixStandIns.Sort()
foreach ($__v in '__f', '__c', '__standInFiles') { $ExecutionContext.SessionState.PSVariable.Remove($__v) }
$ExecutionContext.SessionState.PSVariable.Remove('__v')
