function Invoke-StormatrixEsxCli {
    <#
    .SYNOPSIS
    Calls one esxcli command of a Get-EsxCli -V2 object by its dotted namespace ("storage.core.device.set")
    with a hashtable of arguments, and turns a failure into a typed error carrying esxcli's message.

    .NOTES
    The namespace is walked member by member (never evaluated as text), and the arguments are the V2
    names esxcli documents (device, schednumreqoutstanding, latencysensitivethreshold).
    #>
    [CmdletBinding()]
    [OutputType([object])]
    param(
        [Parameter(Mandatory)][object]$EsxCli,
        [Parameter(Mandatory)][ValidatePattern('^[a-z]+(\.[a-z]+)+$')][string]$Namespace,
        [hashtable]$Arguments = @{}
    )
    $node = $EsxCli
    foreach ($part in $Namespace.Split('.')) {
        $node = $node.$part
        if ($null -eq $node) {
            throw (New-StormatrixVMwareError -ErrorId 'EsxCliFailed' -Category 'NotImplemented' -TargetObject $Namespace `
                    -Message "esxcli has no '$Namespace' on this host")
        }
    }
    try {
        $node.Invoke($Arguments)
    }
    catch {
        throw (New-StormatrixVMwareError -ErrorId 'EsxCliFailed' -Cause $_ -TargetObject $Namespace -Message "esxcli $($Namespace.Replace('.', ' ')) failed")
    }
}
