function Get-StormatrixEngineVersion {
    <#
    .SYNOPSIS
    Reports the version of fio or DiskSpd at a path and whether stormatrix supports it.

    .DESCRIPTION
    fio: runs "fio --version" (prints fio-3.33). DiskSpd: reads the file version of diskspd.exe,
    because "diskspd -?" exits non-zero and its banner changed between releases.

    .PARAMETER Engine
    fio or diskspd.

    .PARAMETER Path
    Path of fio.exe or diskspd.exe (or of fio on Linux, for tests).

    .EXAMPLE
    Get-StormatrixEngineVersion -Engine fio -Path 'C:\Program Files\fio\fio.exe'

    .OUTPUTS
    PSCustomObject with Engine, Path, Version (string), Supported (bool), Minimum.

    .NOTES
    fio 3.20 is the oldest version whose JSON has every field the analysis reads (bw_bytes since
    3.2, job_runtime since 3.8). DiskSpd 2.0.20 writes the XML layout the parser expects.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][ValidateSet('fio', 'diskspd')][string]$Engine,
        [Parameter(Mandatory)][ValidateNotNullOrEmpty()][string]$Path
    )
    if ($Engine -eq 'fio') {
        $minimum = [version]'3.20'
        $run = Invoke-StormatrixNative -FilePath $Path -ArgumentList @('--version')
        if ($run.ExitCode -ne 0) {
            throw (New-StormatrixError -ErrorId 'EngineVersionFailed' -TargetObject $Path `
                    -Message "'$Path --version' exited with $($run.ExitCode): $($run.StdErr) Fix: install fio 3.20 or newer")
        }
        $text = $run.StdOut.Trim()
    }
    else {
        $minimum = [version]'2.0.20'
        if (-not (Test-Path -LiteralPath $Path -PathType Leaf)) {
            throw (New-StormatrixError -ErrorId 'ExecutableNotFound' -ExceptionType 'ItemNotFound' -Category 'ObjectNotFound' `
                    -TargetObject $Path -Message "diskspd not found at '$Path'. Fix: copy diskspd.exe there or pass -DiskSpdPath")
        }
        $text = [string](Get-Item -LiteralPath $Path).VersionInfo.ProductVersion
    }
    $version = $null
    $match = [regex]::Match($text, '(\d+)\.(\d+)(\.(\d+))?')
    if ($match.Success) {
        $version = [version]($match.Groups[1].Value + '.' + $match.Groups[2].Value + '.' + $(if ($match.Groups[4].Success) { $match.Groups[4].Value } else { '0' }))
    }
    [pscustomobject]@{
        Engine    = $Engine
        Path      = $Path
        Version   = $text
        Supported = ($null -ne $version -and $version -ge $minimum)
        Minimum   = $minimum.ToString()
    }
}
