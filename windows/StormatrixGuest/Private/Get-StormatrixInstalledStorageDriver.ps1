function Get-StormatrixInstalledStorageDriver {
    <#
    .SYNOPSIS
    The virtio-win storage driver packages staged in the guest's driver store (viostor, vioscsi), whether
    or not a controller that uses them is present now.

    .DESCRIPTION
    Windows installs a device only from a driver package staged in the Driver Store, which it keeps under
    %SystemRoot%\System32\DriverStore\FileRepository (Microsoft Learn, "Driver Store"); pnputil
    /add-driver and the virtio-win installer stage each package there in a folder named after its INF
    (vioscsi.inf_amd64_<hash>). A staged viostor/vioscsi package is what makes a newly attached
    virtio-blk/virtio-scsi controller work at the next boot, so it answers "can this guest run the
    controller" even while the VM has no such controller. Reading the folder needs no elevation and
    no extra module (Get-WindowsDriver -Online would need both elevation and the DISM module).
    One object per name (Name, Installed, Packages: the package folders); nothing at all when the
    driver store cannot be read, so the caller can tell "not installed" from "unknown".

    .NOTES
    The folder naming (<inf name>_<arch>_<hash>) is what Windows does, not a documented contract; the
    INF file inside the folder is checked too, so a stray folder of that name does not count.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [string[]]$Name = @('viostor', 'vioscsi')
    )
    $windows = [string]$env:SystemRoot
    if (-not $windows) {
        $windows = [Environment]::GetFolderPath('Windows')
    }
    if (-not $windows) {
        return
    }
    $repository = Join-Path -Path $windows -ChildPath 'System32\DriverStore\FileRepository'
    if (-not (Test-Path -LiteralPath $repository)) {
        return
    }
    $folders = @(Get-ChildItem -LiteralPath $repository -Directory -ErrorAction SilentlyContinue)
    foreach ($driver in $Name) {
        $inf = $driver + '.inf'
        $packages = @($folders | Where-Object {
                $_.Name -like ($inf + '_*') -and (Test-Path -LiteralPath (Join-Path -Path $_.FullName -ChildPath $inf))
            } | ForEach-Object { $_.Name } | Sort-Object)
        [pscustomobject]@{
            Name      = $driver
            Installed = ($packages.Count -gt 0)
            Packages  = [string[]]$packages
        }
    }
}
