function Invoke-StormatrixNative {
    <#
    .SYNOPSIS
    Runs a native executable with an argument array and returns its exit code and output.

    .NOTES
    Every call to fio.exe, diskspd.exe and powercfg.exe goes through here: arguments are passed as
    an array (never a command string), $LASTEXITCODE is read right after the call, and tests mock
    this one function instead of executables that do not exist on Linux.
    Standard error is kept apart from standard output because DiskSpd prints its XML on stdout and
    fio prints warnings on stderr. Windows PowerShell 5.1 turns native stderr lines into error
    records and, under ErrorActionPreference Stop, into a terminating error; so the preference is
    Continue for the call only and the records are turned back into text.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][string]$FilePath,
        [string[]]$ArgumentList = @()
    )
    if (-not (Get-Command -Name $FilePath -CommandType Application -ErrorAction SilentlyContinue)) {
        throw (New-StormatrixError -ErrorId 'ExecutableNotFound' -ExceptionType 'ItemNotFound' -Category 'ObjectNotFound' `
                -Message "executable not found: $FilePath (install it, or pass its full path)" -TargetObject $FilePath)
    }
    $previous = $ErrorActionPreference
    $stdout = New-Object System.Collections.Generic.List[string]
    $stderr = New-Object System.Collections.Generic.List[string]
    try {
        $ErrorActionPreference = 'Continue'
        & $FilePath @ArgumentList 2>&1 | ForEach-Object {
            if ($_ -is [System.Management.Automation.ErrorRecord]) {
                $stderr.Add($_.ToString())
            }
            else {
                $stdout.Add([string]$_)
            }
        }
        $exitCode = $LASTEXITCODE
    }
    finally {
        $ErrorActionPreference = $previous
    }
    [pscustomobject]@{
        FilePath  = $FilePath
        Arguments = $ArgumentList
        ExitCode  = $exitCode
        StdOut    = ($stdout -join [Environment]::NewLine)
        StdErr    = ($stderr -join [Environment]::NewLine)
    }
}
