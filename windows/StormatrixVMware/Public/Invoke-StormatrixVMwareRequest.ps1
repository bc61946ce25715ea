function Invoke-StormatrixVMwareRequest {
    <#
    .SYNOPSIS
    Runs one request of the Python vmware backend: connect, call one allowed function with the request's
    parameters as data, disconnect, and answer with one JSON document.

    .DESCRIPTION
    The request is JSON: {"command": NAME, "parameters": {...}, "connection": {...}}. NAME must be one of
    the functions listed in .NOTES; "connection" holds the parameters of Connect-StormatrixVMware (names
    of environment variables, never a password). The parameters are converted to a hashtable and
    splatted: a value is only ever a parameter value, never code.

    The response is {"schema": "stormatrix/vmware-1", "ok": true, "command": NAME, "server": {...},
    "result": ..., "warnings": [...]} or, on failure, "ok": false and "error": {"id", "category",
    "message", "powercli"}, where id is the error's FullyQualifiedErrorId (Stormatrix.VMware.* for the
    module's own) and powercli the message of PowerCLI's exception underneath, when there is one.

    .PARAMETER RequestJson
    The request document (stormatrix-vmware.ps1 reads it from standard input).

    .PARAMETER OnItem
    Run for each object the command writes (as $_), the moment it writes it (stormatrix-vmware.ps1 prints it
    as a 'STORMATRIX-ITEM:' line), before the response: the fleet functions write one object per VM or
    disk as soon as it exists, and the caller journals it then, not after the whole fleet is done.

    .EXAMPLE
    $request = @{ command = 'Get-StormatrixVMwareLayout'; parameters = @{ VMName = 'bench01'; DiskName = 'Hard disk 2' }
        connection = @{ Server = 'vc01.lab'; CredentialSource = 'Environment' } } | ConvertTo-Json -Depth 5
    (Invoke-StormatrixVMwareRequest -RequestJson $request).Json

    .OUTPUTS
    PSCustomObject with Ok (bool) and Json (the response document, compressed to one line).

    .NOTES
    Allowed commands: Get-StormatrixVMwareLayout, Set-StormatrixVMwareController,
    Restore-StormatrixVMwareLayout, Get-StormatrixVMwareHostTuning, Set-StormatrixVMwareHostTuning,
    Get-StormatrixVMwareCpuUsage, Get-StormatrixVMwareHostInfo, and the fleet's
    Get-StormatrixVMwareFleetTarget, New-StormatrixVMwareFleet, Add-StormatrixVMwareFleetDisk,
    Restart-StormatrixVMwareFleet, Get-StormatrixVMwareFleetFioVersion, Remove-StormatrixVMwareFleetDisk, Remove-StormatrixVMwareFleet. Warnings (certificate checks off, PowerCLI notices) are returned in
    the response instead of being printed, so standard output stays one document.
    A command that changes the VM or the host (it has -WhatIf/-Confirm itself) is confirmed here, once
    per request, and then called with -Confirm:$false; under -WhatIf it is called with -WhatIf, says
    what it would change and changes nothing (the response is ok with an empty result). The confirm
    impact is Medium, so the backend's non-interactive calls are not asked.
    #>
    [CmdletBinding(SupportsShouldProcess)]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][AllowEmptyString()][string]$RequestJson,
        [scriptblock]$OnItem = $null
    )
    $allowed = @('Get-StormatrixVMwareLayout', 'Set-StormatrixVMwareController', 'Restore-StormatrixVMwareLayout',
        'Get-StormatrixVMwareHostTuning', 'Set-StormatrixVMwareHostTuning', 'Get-StormatrixVMwareCpuUsage',
        'Get-StormatrixVMwareHostInfo', 'Get-StormatrixVMwareFleetTarget', 'New-StormatrixVMwareFleet', 'Add-StormatrixVMwareFleetDisk',
        'Restart-StormatrixVMwareFleet', 'Get-StormatrixVMwareFleetFioVersion', 'Remove-StormatrixVMwareFleetDisk', 'Remove-StormatrixVMwareFleet')
    $response = [ordered]@{ schema = 'stormatrix/vmware-1'; ok = $false; command = $null; server = $null; result = $null; warnings = @() }
    $warnings = New-Object System.Collections.Generic.List[string]
    $previous = $ErrorActionPreference
    $ErrorActionPreference = 'Stop'
    try {
        try {
            $request = ConvertFrom-Json -InputObject $RequestJson -ErrorAction Stop
        }
        catch {
            throw (New-StormatrixVMwareError -ErrorId 'BadRequest' -Category 'InvalidData' -Cause $_ -Message 'the request is not a JSON document')
        }
        if ($null -eq $request -or $request -isnot [System.Management.Automation.PSCustomObject]) {
            throw (New-StormatrixVMwareError -ErrorId 'BadRequest' -Category 'InvalidData' -Message 'the request must be a JSON object with command, parameters and connection')
        }
        $command = [string]$request.command
        $response['command'] = $command
        if ($allowed -notcontains $command) {
            throw (New-StormatrixVMwareError -ErrorId 'UnknownCommand' -Category 'InvalidArgument' -TargetObject $command `
                    -Message "'$command' is not a command this module runs for the backend (allowed: $($allowed -join ', '))")
        }
        $parameters = ConvertTo-StormatrixVMwareHashtable -InputObject $request.parameters
        if ($null -eq $parameters) { $parameters = @{} }
        $connection = ConvertTo-StormatrixVMwareHashtable -InputObject $request.connection
        if ($parameters -isnot [hashtable] -or $connection -isnot [hashtable]) {
            throw (New-StormatrixVMwareError -ErrorId 'BadRequest' -Category 'InvalidData' -Message 'parameters and connection must be JSON objects')
        }
        try {
            $server = Connect-StormatrixVMware @connection -WarningVariable +connectWarnings -WarningAction SilentlyContinue
            $response['server'] = $server
            if ((Get-Command -Name $command -Module 'StormatrixVMware').Parameters.ContainsKey('Confirm')) {
                $action = "$command $(ConvertTo-Json -InputObject $parameters -Depth 4 -Compress)"
                $parameters['Confirm'] = $false
                if ($WhatIfPreference) {
                    $parameters['WhatIf'] = $true  # the command itself says what it would change
                }
                elseif (-not $PSCmdlet.ShouldProcess([string]$connection['Server'], $action)) {
                    throw (New-StormatrixVMwareError -ErrorId 'Declined' -Category 'OperationStopped' -TargetObject $command -Message "$command was not confirmed; nothing was changed")
                }
            }
            $result = & $command @parameters -WarningVariable +commandWarnings -WarningAction SilentlyContinue | ForEach-Object {
                if ($OnItem) { $_ | ForEach-Object -Process $OnItem }
                $_
            }
        }
        finally {
            foreach ($w in @($connectWarnings) + @($commandWarnings)) {
                if ($w) { $warnings.Add([string]$w) }
            }
            Disconnect-StormatrixVMware
        }
        $response['result'] = $result
        $response['ok'] = $true
    }
    catch {
        $inner = $_.Exception.InnerException
        $powercli = $null
        if ($inner) { $powercli = $inner.Message }
        $response['error'] = [ordered]@{
            id       = [string]$_.FullyQualifiedErrorId
            category = [string]$_.CategoryInfo.Category
            message  = $_.Exception.Message
            powercli = $powercli
        }
    }
    finally {
        $ErrorActionPreference = $previous
    }
    $response['warnings'] = $warnings.ToArray()
    [pscustomobject]@{ Ok = [bool]$response['ok']; Json = (ConvertTo-Json -InputObject $response -Depth 12 -Compress) }
}
