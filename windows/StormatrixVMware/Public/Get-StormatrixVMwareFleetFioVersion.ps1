function Get-StormatrixVMwareFleetFioVersion {
    <#
    .SYNOPSIS
    Asks every worker of a fleet which fio its guest runs (fio --version through VMware Tools guest
    operations, Invoke-VMScript), before the first point, and returns one object per worker.

    .DESCRIPTION
    The controller's fio client and each worker's fio server must speak one protocol version
    (docs/fio-server.md); a worker built with another fio answers "bad server cmd version" in the middle of a
    run. This reads each guest's version first: every VM is checked to be the fleet's (its annotation names
    the run id), then Invoke-VMScript -ScriptType Bash runs 'fio --version' in each guest with the guest
    credentials read from the environment variables whose NAMES are given. A worker whose guest cannot
    answer (VMware Tools not running, the credentials refused, fio missing) is reported with its Problem;
    the call does not stop at the first one, so the caller can name every worker.

    .PARAMETER VMId
    The workers' ids.

    .PARAMETER RunId
    The fleet's run id; a VM without it in its annotation is refused before any guest is asked.

    .PARAMETER GuestUserVariable
    Name of the environment variable that holds the guest user (e.g. root or a user allowed to run fio).

    .PARAMETER GuestPasswordVariable
    Name of the environment variable that holds the guest password (the name, never the password).

    .EXAMPLE
    $env:STORMATRIX_GUEST_USER = 'root'
    $env:STORMATRIX_GUEST_PASSWORD = Read-Host -AsSecureString | ConvertFrom-SecureString -AsPlainText
    Get-StormatrixVMwareFleetFioVersion -VMId VirtualMachine-vm-201 -RunId 1a2b3c4d5e6f

    .OUTPUTS
    PSCustomObject per worker: Kind 'vm', Id, Name, Version (the first line of fio --version, or $null),
    ExitCode, Problem ($null when the guest answered with exit code 0).

    .NOTES
    Invoke-VMScript needs the VM powered on with VMware Tools running (call it after
    Restart-StormatrixVMwareFleet) and a guest account; the password goes from the environment into a
    PSCredential and is never written to any stream. Nothing in the guest is changed.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][string[]]$VMId,
        [Parameter(Mandatory)][ValidatePattern('^[0-9a-f]{6,32}$')][string]$RunId,
        [ValidatePattern('^[A-Za-z_][A-Za-z0-9_]*$')][string]$GuestUserVariable = 'STORMATRIX_GUEST_USER',
        [ValidatePattern('^[A-Za-z_][A-Za-z0-9_]*$')][string]$GuestPasswordVariable = 'STORMATRIX_GUEST_PASSWORD'
    )
    $credential = Get-StormatrixVMwareEnvironmentCredential -UserVariable $GuestUserVariable -PasswordVariable $GuestPasswordVariable `
        -Purpose 'the guest account that runs fio --version in the workers; set them in the environment that runs stormatrix'
    $members = Get-StormatrixVMwareFleetMember -VMId $VMId -RunId $RunId
    foreach ($vm in $members) {
        $answer = [ordered]@{ Kind = 'vm'; Id = [string]$vm.Id; Name = [string]$vm.Name; Version = $null; ExitCode = $null; Problem = $null }
        try {
            $result = Invoke-VMScript -VM $vm -ScriptText 'fio --version' -ScriptType Bash -GuestCredential $credential -ErrorAction Stop
            $answer.ExitCode = [int]$result.ExitCode
            $first = @(([string]$result.ScriptOutput) -split "`r?`n" | Where-Object { $_.Trim() })[0]
            if ($answer.ExitCode -eq 0 -and $first) {
                $answer.Version = $first.Trim()
            }
            else {
                $text = if ($first) { $first.Trim() } else { 'no output' }
                $answer.Problem = "fio --version exited with $($answer.ExitCode) ($text)"
            }
        }
        catch {
            $answer.Problem = "Invoke-VMScript failed: $($_.Exception.Message)"
        }
        [pscustomobject]$answer
    }
}
