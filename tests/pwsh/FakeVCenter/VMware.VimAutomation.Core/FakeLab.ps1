# The fake's plumbing: the lab file, the call log, injected faults and hangs, PowerCLI-shaped errors,
# wildcard names, times, and the few vSphere API types scripts create with New-Object.

# --- vSphere API and PowerCLI exception types ---------------------------------------------------------------
# Emitted at run time with Reflection.Emit: Add-Type would compile C# (Roslyn) in every pwsh process the backend starts.
# VMware.Vim.* are the vSphere SDK classes a script builds a ReconfigVM spec from; the exceptions carry the
# class names PowerCLI's errors have (UNSURE: the exact namespaces differ between PowerCLI releases).
if (-not ('VMware.Vim.VirtualMachineConfigSpec' -as [type])) {
    $assembly = [System.Reflection.Emit.AssemblyBuilder]::DefineDynamicAssembly([System.Reflection.AssemblyName]::new('StormatrixFakeVim'), 'Run')
    $emitModule = $assembly.DefineDynamicModule('StormatrixFakeVim')
    $fields = [ordered]@{
        'VMware.Vim.VirtualDeviceConfigSpec'   = [ordered]@{ Operation = [string]; FileOperation = [string]; Device = [object] }
        'VMware.Vim.VirtualMachineConfigSpec'  = [ordered]@{ DeviceChange = [object[]]; ExtraConfig = [object[]] }
        'VMware.Vim.OptionValue'               = [ordered]@{ Key = [string]; Value = [object] }
    }
    foreach ($typeName in $fields.Keys) {
        $builder = $emitModule.DefineType($typeName, 'Public, Class')
        foreach ($field in $fields[$typeName].Keys) {
            [void]$builder.DefineField($field, $fields[$typeName][$field], 'Public')
        }
        [void]$builder.CreateType()
    }
    foreach ($exceptionName in @('VimException', 'ViServerConnectionException', 'ViSecurityNegotiationException', 'InvalidLogin',
            'InvalidVmState', 'InvalidGuestLogin', 'VMNotFound', 'ObjectNotFound', 'InvalidArgument', 'EsxCliFault', 'Timeout')) {
        $builder = $emitModule.DefineType("VMware.VimAutomation.ViCore.Types.V1.ErrorHandling.$exceptionName", 'Public, Class', [System.Exception])
        $ctor = $builder.DefineConstructor('Public', 'Standard', [type[]]@([string]))
        $il = $ctor.GetILGenerator()
        $il.Emit([System.Reflection.Emit.OpCodes]::Ldarg_0)
        $il.Emit([System.Reflection.Emit.OpCodes]::Ldarg_1)
        $il.Emit([System.Reflection.Emit.OpCodes]::Call, [System.Exception].GetConstructor([type[]]@([string])))
        $il.Emit([System.Reflection.Emit.OpCodes]::Ret)
        [void]$builder.CreateType()
    }
}

# --- the lab file -------------------------------------------------------------------------------------------

function Get-FakeLabPath {
    $path = $env:STORMATRIX_FAKE_VCENTER_LAB
    if (-not $path -or -not [System.IO.File]::Exists($path)) {
        throw "fake PowerCLI: STORMATRIX_FAKE_VCENTER_LAB ('$path') does not name a lab file; copy tests/pwsh/FakeVCenter/lab.json and point the variable at the copy"
    }
    $path
}

function Read-FakeLab {
    ConvertFrom-Json -InputObject ([System.IO.File]::ReadAllText((Get-FakeLabPath)))
}

function Save-FakeLab {
    param([Parameter(Mandatory)][object]$Lab)
    $path = Get-FakeLabPath
    $temp = "$path.$PID.tmp"
    [System.IO.File]::WriteAllText($temp, (ConvertTo-Json -InputObject $Lab -Depth 32))
    [System.IO.File]::Move($temp, $path, $true)
}

function Set-FakeProperty {
    # Adds or sets a property of an object read from the lab (PSCustomObject).
    param([Parameter(Mandatory)][object]$Object, [Parameter(Mandatory)][string]$Name, [AllowNull()][object]$Value)
    if ($Object.PSObject.Properties[$Name]) {
        $Object.$Name = $Value
    }
    else {
        $Object.PSObject.Properties.Add([psnoteproperty]::new($Name, $Value))
    }
}

function Open-FakeCall {
    # Every fake cmdlet starts here: read the lab, log the call, then play an injected hang or fault.
    param([Parameter(Mandatory)][string]$Cmdlet, [hashtable]$Parameters = @{}, [Parameter(Mandatory)][object]$Caller)
    $lab = Read-FakeLab
    $lab.calls = @($lab.calls) + @([pscustomobject]@{ cmdlet = $Cmdlet; parameters = $Parameters })
    $nth = @($lab.calls | Where-Object { $_.cmdlet -eq $Cmdlet }).Count
    if ([string]$lab.hang -eq $Cmdlet -or [string]$lab.hang -eq "$Cmdlet#$nth") {
        $lab.hang = $null
        Set-FakeProperty -Object $lab -Name 'hung_pid' -Value $PID
        Save-FakeLab -Lab $lab
        [System.Threading.Thread]::Sleep(600000)
    }
    $message = Get-FakeFault -Lab $lab -Step $Cmdlet -LoggedAs $Cmdlet
    if ($null -ne $message) {
        Save-FakeLab -Lab $lab
        $Caller.ThrowTerminatingError((New-FakeError -Cmdlet $Cmdlet -Kind 'VimException' -Category InvalidOperation `
                    -ErrorId "Client20_InjectedFault,VMware.VimAutomation.ViCore.Cmdlets.Commands.$($Cmdlet.Replace('-', ''))" -Message $message))
    }
    $lab
}

function Get-FakeFault {
    # The injected fault for this call of a step, removed from the lab (one-shot), or $null: "faults" keys are
    # the step ("Set-HardDisk", "esxcli:storage.core.device.set", "ReconfigVM") for its next call, or the step
    # with "#N" for its N-th call in this lab ("esxcli:storage.core.device.set#2").
    param([Parameter(Mandatory)][object]$Lab, [Parameter(Mandatory)][string]$Step, [Parameter(Mandatory)][string]$LoggedAs)
    if (-not $Lab.faults) { return $null }
    $nth = @($Lab.calls | Where-Object { $_.cmdlet -eq $LoggedAs }).Count
    foreach ($key in @($Step, "$Step#$nth")) {
        if ($Lab.faults.PSObject.Properties[$key]) {
            $message = [string]$Lab.faults.$key
            $Lab.faults.PSObject.Properties.Remove($key)
            return $message
        }
    }
    $null
}

# --- errors -------------------------------------------------------------------------------------------------

function New-FakeError {
    # PowerCLI's messages start with the time and the cmdlet, tab-separated ("11/22/2026 3:00:00 AM<TAB>Get-VM<TAB><TAB>VM with
    # name 'x' was not found using the specified filter(s).").
    param(
        [Parameter(Mandatory)][string]$Cmdlet,
        [Parameter(Mandatory)][string]$Kind,
        [Parameter(Mandatory)][System.Management.Automation.ErrorCategory]$Category,
        [Parameter(Mandatory)][string]$ErrorId,
        [Parameter(Mandatory)][string]$Message,
        [object]$Target = $null
    )
    $text = ([datetime]::Now.ToString([cultureinfo]::InvariantCulture)) + "`t" + $Cmdlet + "`t`t" + $Message
    $exception = [System.Activator]::CreateInstance(("VMware.VimAutomation.ViCore.Types.V1.ErrorHandling.$Kind" -as [type]), [object[]]@($text))
    [System.Management.Automation.ErrorRecord]::new($exception, $ErrorId, $Category, $Target)
}

function New-FakeNotConnectedError {
    param([Parameter(Mandatory)][string]$Cmdlet)
    New-FakeError -Cmdlet $Cmdlet -Kind 'ViServerConnectionException' -Category ResourceUnavailable `
        -ErrorId "Core_BaseCmdlet_NotConnectedError,VMware.VimAutomation.ViCore.Cmdlets.Commands.$($Cmdlet.Replace('-', ''))" `
        -Message 'You are not currently connected to any servers. Please connect first using a Connect cmdlet.'
}

function Assert-FakeConnected {
    param([Parameter(Mandatory)][string]$Cmdlet, [Parameter(Mandatory)][object]$Caller)
    if (-not $script:Session.Server) {
        $Caller.ThrowTerminatingError((New-FakeNotConnectedError -Cmdlet $Cmdlet))
    }
}

function New-FakeStateError {
    # UNSURE: the wording PowerCLI uses for a reconfiguration of a running VM differs between releases.
    param([Parameter(Mandatory)][string]$Cmdlet, [Parameter(Mandatory)][object]$Vm, [string]$Needed = 'PoweredOff')
    New-FakeError -Cmdlet $Cmdlet -Kind 'InvalidVmState' -Category InvalidOperation -Target $Vm.name `
        -ErrorId "Client20_VmServiceImpl_InvalidVmState,VMware.VimAutomation.ViCore.Cmdlets.Commands.$($Cmdlet.Replace('-', ''))" `
        -Message "The VM '$($Vm.name)' must be in the following state: $Needed. The attempted operation cannot be performed in the current state ($($Vm.powerState))."
}

# --- names and times ----------------------------------------------------------------------------------------

function Test-FakeName {
    # PowerCLI matches -Name values as wildcards, case-insensitively.
    param([AllowNull()][string]$Name, [AllowNull()][string]$Pattern)
    if ($null -eq $Pattern -or $Pattern -eq '') { return $true }
    [System.Management.Automation.WildcardPattern]::new($Pattern, [System.Management.Automation.WildcardOptions]::IgnoreCase).IsMatch([string]$Name)
}

function ConvertFrom-FakeLabTime {
    # A lab time (an ISO string with Z, or the [datetime] ConvertFrom-Json made of it on PowerShell 6+) as UTC.
    param([AllowNull()][object]$Value)
    if ($null -eq $Value -or $Value -eq '') { return $null }
    if ($Value -is [datetime]) {
        if ($Value.Kind -eq [System.DateTimeKind]::Unspecified) { return [datetime]::SpecifyKind($Value, 'Utc') }
        return $Value.ToUniversalTime()
    }
    [datetime]::Parse([string]$Value, [cultureinfo]::InvariantCulture, [System.Globalization.DateTimeStyles]'AdjustToUniversal, AssumeUniversal')
}

function ConvertTo-FakeLabTime {
    param([Parameter(Mandatory)][datetime]$Utc)
    $Utc.ToUniversalTime().ToString('yyyy-MM-ddTHH:mm:ss.fffZ', [cultureinfo]::InvariantCulture)
}

function ConvertTo-FakeUnixMs {
    # What the server receives for a [datetime] argument. UNSURE: PowerCLI does not document how it reads a
    # DateTime of Kind Unspecified; like .NET's ToUniversalTime, this fake takes it as the client's local time.
    param([Parameter(Mandatory)][datetime]$Time)
    [long]([System.DateTimeOffset]::new($Time.ToUniversalTime()).ToUnixTimeMilliseconds())
}
