# Functions the binding samples call (a stand-in for a module's files).
function Get-SampleDisk {
    [CmdletBinding(DefaultParameterSetName = 'BySerial')]
    param(
        [Parameter(Mandatory, ParameterSetName = 'BySerial', Position = 0)][string]$Serial,
        [Parameter(Mandatory, ParameterSetName = 'ByNumber')][int]$Number,
        [string]$Controller,
        [string]$ControllerType
    )
    Get-SamplePrivate -Disk $Serial
}

function Set-SampleDisk {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory, ValueFromPipeline)][object]$InputObject,
        [Parameter(Mandatory)][bool]$Offline
    )
    process { $InputObject }
}

function Get-SamplePrivate {
    [CmdletBinding()]
    param([Parameter(Mandatory)][string]$Disk)
    $Disk
}
