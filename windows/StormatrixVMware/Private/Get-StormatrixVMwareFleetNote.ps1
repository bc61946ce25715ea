function Get-StormatrixVMwareFleetNote {
    <#
    .SYNOPSIS
    The annotation (Notes) every worker of a fleet carries: it names the fleet's run id, which is how the
    module recognises a VM as that fleet's before it powers, changes or removes it.

    .NOTES
    vSphere tags need a tag category made beforehand by an administrator, and a custom attribute a
    definition; the annotation needs neither and is shown in the vSphere Client's summary, so a person
    who finds a worker sees which run made it and how to remove it.
    #>
    [CmdletBinding()]
    [OutputType([string])]
    param(
        [Parameter(Mandatory)][string]$RunId
    )
    "stormatrix fleet $($RunId): a benchmark worker; ``stormatrix fleet destroy`` removes it"
}
