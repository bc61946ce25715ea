# Fake host-side cmdlets: Get-VMHost, Get-EsxCli -V2, Get-Stat, and the VM advanced settings
# (extraConfig, e.g. disk.EnableUUID).

function Get-VMHost {
    [CmdletBinding(DefaultParameterSetName = 'Default')]
    param([Parameter(Position = 0, ParameterSetName = 'Default')][string[]]$Name, [Parameter(ParameterSetName = 'ByVM')][object[]]$VM)
    Assert-FakeConnected -Cmdlet 'Get-VMHost' -Caller $PSCmdlet
    $lab = Open-FakeCall -Cmdlet 'Get-VMHost' -Parameters @{ Name = ($Name -join ','); VM = (@($VM | ForEach-Object { [string]$_.Name }) -join ',') } -Caller $PSCmdlet
    Save-FakeLab -Lab $lab
    if ($VM) {
        foreach ($labVm in @(Resolve-FakeVmArgument -Lab $lab -Value $VM)) { New-FakeVMHostObject -EsxHost (Get-FakeLabHost -Lab $lab -Name $labVm.host) }
        return
    }
    if (-not $Name) { $Name = @('*') }
    foreach ($pattern in $Name) {
        $matched = @($lab.hosts | Where-Object { Test-FakeName -Name $_.name -Pattern $pattern })
        if ($matched.Count -eq 0) {
            $PSCmdlet.WriteError((New-FakeError -Cmdlet 'Get-VMHost' -Kind 'ObjectNotFound' -Category ObjectNotFound -Target $pattern `
                        -ErrorId 'Core_OutputHelper_WriteNotFoundError,VMware.VimAutomation.ViCore.Cmdlets.Commands.GetVMHost' `
                        -Message "VMHost with name '$pattern' was not found using the specified filter(s)."))
        }
        foreach ($h in $matched) { New-FakeVMHostObject -EsxHost $h }
    }
}

# --- esxcli -------------------------------------------------------------------------------------------------
# Get-EsxCli -V2 returns a tree of namespaces whose leaves have Invoke(@{argument = value}); the arguments are
# esxcli's long option names without dashes (device, schednumreqoutstanding, latencysensitivethreshold), and
# each answer row is an object whose property names are esxcli's column names without spaces, values as the
# strings esxcli prints ("0 milliseconds"). The rows of the "list" commands come from the lab host's
# "esxcli" table; the "set" commands change them and return true.
$script:EsxCliMethods = [ordered]@{
    'storage.core.device.list'                 = @('device', 'excludeoffline', 'pereduceddata')
    'storage.core.device.set'                  = @('device', 'schednumreqoutstanding', 'queuefullsamplesize', 'queuefullthreshold', 'name', 'defaultname', 'state')
    'storage.core.device.latencythreshold.list' = @('device')
    'storage.core.device.latencythreshold.set'  = @('device', 'latencysensitivethreshold', 'vendor', 'model')
}

function Invoke-FakeEsxCli {
    param([Parameter(Mandatory)][string]$HostName, [Parameter(Mandatory)][string]$Namespace, [AllowNull()][object]$Arguments)
    $lab = Read-FakeLab
    $args_ = @{}
    if ($Arguments -is [System.Collections.IDictionary]) { foreach ($k in $Arguments.Keys) { $args_[[string]$k] = $Arguments[$k] } }
    $lab.calls = @($lab.calls) + @([pscustomobject]@{ cmdlet = "esxcli $($Namespace.Replace('.', ' '))"; parameters = $args_ })
    $message = Get-FakeFault -Lab $lab -Step "esxcli:$Namespace" -LoggedAs "esxcli $($Namespace.Replace('.', ' '))"
    if ($null -ne $message) {
        Save-FakeLab -Lab $lab
        throw ([System.Activator]::CreateInstance(('VMware.VimAutomation.ViCore.Types.V1.ErrorHandling.EsxCliFault' -as [type]), [object[]]@("EsxCLI.CLIFault.summary: $message")))
    }
    Save-FakeLab -Lab $lab
    $unknown = @($args_.Keys | Where-Object { $script:EsxCliMethods[$Namespace] -notcontains $_ })
    if ($unknown.Count -gt 0) {
        # UNSURE: PowerCLI's wording for an argument name the esxcli method does not have.
        throw "Invalid argument '$($unknown -join ', ')' for esxcli $($Namespace.Replace('.', ' ')): valid arguments are $($script:EsxCliMethods[$Namespace] -join ', ')"
    }
    $esx = Get-FakeLabHost -Lab $lab -Name $HostName
    $tableName = $Namespace -replace '\.set$', '.list'
    $rows = @($esx.esxcli.$tableName)
    if ($args_.ContainsKey('device')) {
        $rows = @($rows | Where-Object { $_.Device -eq [string]$args_['device'] })
        if ($rows.Count -eq 0) {
            throw "EsxCLI.CLIFault.summary: Unable to find device with name $($args_['device'])"
        }
    }
    if ($Namespace.EndsWith('.list')) {
        foreach ($row in $rows) {
            $out = [ordered]@{}
            foreach ($p in $row.PSObject.Properties) { $out[$p.Name.Replace(' ', '')] = [string]$p.Value }
            [pscustomobject]$out
        }
        return
    }
    if (-not $args_.ContainsKey('device')) { throw 'EsxCLI.CLIFault.summary: Missing required parameter -d|--device' }
    foreach ($row in $rows) {
        if ($args_.ContainsKey('schednumreqoutstanding')) {
            $row.'No of outstanding IOs with competing worlds' = [string][int]$args_['schednumreqoutstanding']
        }
        if ($args_.ContainsKey('latencysensitivethreshold')) {
            $row.'Latency Sensitive Threshold' = "$([int]$args_['latencysensitivethreshold']) milliseconds"
        }
    }
    Save-FakeLab -Lab $lab
    $true
}

function Get-EsxCli {
    [CmdletBinding()]
    param([Parameter(Mandatory, Position = 0)][object]$VMHost, [switch]$V2)
    Assert-FakeConnected -Cmdlet 'Get-EsxCli' -Caller $PSCmdlet
    $lab = Open-FakeCall -Cmdlet 'Get-EsxCli' -Parameters @{ VMHost = $(if ($VMHost -is [string]) { $VMHost } else { [string]$VMHost.Name }); V2 = [bool]$V2 } -Caller $PSCmdlet
    Save-FakeLab -Lab $lab
    if (-not $V2) { throw 'fake PowerCLI: only Get-EsxCli -V2 is modelled (the V1 interface is deprecated)' }
    $pattern = $(if ($VMHost -is [string]) { $VMHost } else { [string]$VMHost.Name })
    $matched = @($lab.hosts | Where-Object { Test-FakeName -Name $_.name -Pattern $pattern })
    if ($matched.Count -ne 1) {
        $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'Get-EsxCli' -Kind 'ObjectNotFound' -Category ObjectNotFound -Target $pattern `
                    -ErrorId 'Core_ObnSelector_SelectObjectByNameCore_ObjectNotFound,VMware.VimAutomation.ViCore.Cmdlets.Commands.GetEsxCli' `
                    -Message "Could not find VMHost with name '$pattern'."))
    }
    $root = [pscustomobject]@{}
    foreach ($namespace in $script:EsxCliMethods.Keys) {
        $node = $root
        $parts = $namespace.Split('.')
        for ($i = 0; $i -lt $parts.Count - 1; $i++) {
            if (-not $node.PSObject.Properties[$parts[$i]]) { $node.PSObject.Properties.Add([psnoteproperty]::new($parts[$i], [pscustomobject]@{})) }
            $node = $node.($parts[$i])
        }
        $leaf = [pscustomobject]@{ PSTypeName = 'VMware.VimAutomation.ViCore.Impl.V1.EsxCli.EsxCliMethodImpl'; FullName = $namespace; HostName = [string]$matched[0].name }
        $leaf.PSObject.Methods.Add([psscriptmethod]::new('Invoke', { param($Arguments) Invoke-FakeEsxCli -HostName $this.HostName -Namespace $this.FullName -Arguments $Arguments }))
        $leaf.PSObject.Methods.Add([psscriptmethod]::new('CreateArgs', { $h = @{}; foreach ($a in $script:EsxCliMethods[$this.FullName]) { $h[$a] = $null }; $h }))
        $node.PSObject.Properties.Add([psnoteproperty]::new($parts[-1], $leaf))
    }
    $root
}

# --- performance statistics ---------------------------------------------------------------------------------
# The lab's "stats" rows: {"entity": name, "metricId": "cpu.used.summation", "instance": "", "unit": "millisecond",
# "intervalSecs": 20, "samples": [{"timestamp": "...Z", "value": 4000}]}; a sample's timestamp is the END of its
# interval. Get-Stat returns the samples with Start < timestamp <= Finish (PerfQuerySpec: the sample at startTime
# is excluded, the one at endTime included), newest first as PowerCLI lists them, with Timestamp in the client's
# local time (Kind Local). Every call is recorded under "statRequests" with -Start/-Finish as UTC epoch
# milliseconds and their DateTime Kind, so a test can compare them with the window it meant.
# UNSURE: realtime statistics are kept about an hour on ESXi; the fake does not age samples out.

function Get-Stat {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory, Position = 0, ValueFromPipeline)][object[]]$Entity,
        [string[]]$Stat,
        [switch]$Realtime,
        [datetime]$Start,
        [datetime]$Finish,
        [int[]]$IntervalSecs,
        [int]$MaxSamples,
        [string[]]$Instance,
        [switch]$Cpu
    )
    process {
        Assert-FakeConnected -Cmdlet 'Get-Stat' -Caller $PSCmdlet
        $lab = Open-FakeCall -Cmdlet 'Get-Stat' -Parameters @{ Entity = (@($Entity | ForEach-Object { [string]$_.Name }) -join ','); Stat = ($Stat -join ',') } -Caller $PSCmdlet
        $request = [ordered]@{ entity = (@($Entity | ForEach-Object { [string]$_.Name }) -join ','); stat = @($Stat); realtime = [bool]$Realtime
            startUnixMs = $null; startKind = $null; finishUnixMs = $null; finishKind = $null }
        if ($PSBoundParameters.ContainsKey('Start')) { $request.startUnixMs = ConvertTo-FakeUnixMs -Time $Start; $request.startKind = [string]$Start.Kind }
        if ($PSBoundParameters.ContainsKey('Finish')) { $request.finishUnixMs = ConvertTo-FakeUnixMs -Time $Finish; $request.finishKind = [string]$Finish.Kind }
        $lab.statRequests = @($lab.statRequests) + @([pscustomobject]$request)
        Save-FakeLab -Lab $lab
        $from = $null
        $to = $null
        if ($PSBoundParameters.ContainsKey('Start')) { $from = $Start.ToUniversalTime() }
        if ($PSBoundParameters.ContainsKey('Finish')) { $to = $Finish.ToUniversalTime() }
        $interval = 20
        if ($IntervalSecs) { $interval = $IntervalSecs[0] }
        foreach ($one in $Entity) {
            foreach ($metric in $Stat) {
                $rows = @($lab.stats | Where-Object { $_.entity -eq [string]$one.Name -and $_.metricId -eq $metric -and [int]$_.intervalSecs -eq $interval })
                if ($rows.Count -eq 0 -and @($lab.stats | Where-Object { $_.entity -eq [string]$one.Name -and $_.metricId -eq $metric }).Count -eq 0) {
                    $PSCmdlet.WriteError((New-FakeError -Cmdlet 'Get-Stat' -Kind 'InvalidArgument' -Category InvalidArgument -Target $metric `
                                -ErrorId 'Client20_RuntimeDataServiceImpl_CheckUserMetrics_MetricDoesntExist,VMware.VimAutomation.ViCore.Cmdlets.Commands.GetViStats' `
                                -Message "The metric counter `"$metric`" doesn't exist for entity `"$($one.Name)`"."))
                    continue
                }
                $samples = foreach ($row in $rows) {
                    if ($Instance -and $Instance -notcontains [string]$row.instance) { continue }
                    foreach ($s in @($row.samples)) {
                        $t = ConvertFrom-FakeLabTime -Value $s.timestamp
                        if (($null -ne $from -and $t -le $from) -or ($null -ne $to -and $t -gt $to)) { continue }
                        [pscustomobject]@{
                            PSTypeName   = 'VMware.VimAutomation.ViCore.Impl.V1.Stat.FloatSampleImpl'
                            MetricId     = $metric
                            Timestamp    = $t.ToLocalTime()
                            Value        = [double]$s.value
                            Unit         = [string]$row.unit
                            Instance     = [string]$row.instance
                            IntervalSecs = $interval
                            Entity       = $one
                            EntityId     = [string]$one.Id
                            Description  = ''
                        }
                    }
                }
                @($samples) | Sort-Object -Property Timestamp -Descending
            }
        }
    }
}

# --- advanced settings (VM extraConfig) ---------------------------------------------------------------------

function Get-AdvancedSetting {
    [CmdletBinding()]
    param([Parameter(Mandatory, Position = 0)][object[]]$Entity, [string[]]$Name)
    Assert-FakeConnected -Cmdlet 'Get-AdvancedSetting' -Caller $PSCmdlet
    $lab = Open-FakeCall -Cmdlet 'Get-AdvancedSetting' -Parameters @{ Name = ($Name -join ',') } -Caller $PSCmdlet
    Save-FakeLab -Lab $lab
    foreach ($labVm in @(Resolve-FakeVmArgument -Lab $lab -Value $Entity)) {
        foreach ($p in @($labVm.extraConfig.PSObject.Properties)) {
            if (-not $Name -or @($Name | Where-Object { Test-FakeName -Name $p.Name -Pattern $_ }).Count -gt 0) {
                [pscustomobject]@{ PSTypeName = 'VMware.VimAutomation.ViCore.Impl.V1.AdvancedSettingImpl'; Name = $p.Name; Value = [string]$p.Value; Type = 'VM'; Entity = [string]$labVm.name }
            }
        }
    }
}

function New-AdvancedSetting {
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'Medium')]
    param([Parameter(Mandatory, Position = 0)][object]$Entity, [Parameter(Mandatory)][string]$Name, [Parameter(Mandatory)][object]$Value, [switch]$Force)
    Assert-FakeConnected -Cmdlet 'New-AdvancedSetting' -Caller $PSCmdlet
    $lab = Open-FakeCall -Cmdlet 'New-AdvancedSetting' -Parameters @{ Name = $Name; Value = [string]$Value; Force = [bool]$Force } -Caller $PSCmdlet
    foreach ($labVm in @(Resolve-FakeVmArgument -Lab $lab -Value $Entity)) {
        if ($labVm.extraConfig.PSObject.Properties[$Name] -and -not $Force) {
            Save-FakeLab -Lab $lab
            # UNSURE: the wording; -Force is what PowerCLI documents for overwriting an existing setting.
            $PSCmdlet.ThrowTerminatingError((New-FakeError -Cmdlet 'New-AdvancedSetting' -Kind 'InvalidArgument' -Category ResourceExists -Target $Name `
                        -ErrorId 'Core_NewAdvancedSetting_SettingExists,VMware.VimAutomation.ViCore.Cmdlets.Commands.NewAdvancedSetting' `
                        -Message "Setting with name '$Name' already exists for '$($labVm.name)'. Use -Force to overwrite it."))
        }
        if ($PSCmdlet.ShouldProcess($labVm.name, "New-AdvancedSetting $Name")) { Set-FakeProperty -Object $labVm.extraConfig -Name $Name -Value ([string]$Value) }
        Save-FakeLab -Lab $lab
        [pscustomobject]@{ PSTypeName = 'VMware.VimAutomation.ViCore.Impl.V1.AdvancedSettingImpl'; Name = $Name; Value = [string]$Value; Type = 'VM'; Entity = [string]$labVm.name }
    }
}
