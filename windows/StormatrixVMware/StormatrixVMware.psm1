# StormatrixVMware: runs on the controller workstation under PowerShell 7 with VMware PowerCLI.
# Dot-sources Private/ then Public/ (one function per file) and exports the public functions. The
# manifest lists FunctionsToExport explicitly; a compliance test keeps the two in step.
# PowerCLI is imported by Connect-StormatrixVMware, not by the manifest, so that the module loads (and
# its Pester tests run with PowerCLI stubbed) where PowerCLI is not installed.

$privateFiles = @(Get-ChildItem -Path (Join-Path $PSScriptRoot 'Private') -Filter '*.ps1' -ErrorAction SilentlyContinue)
$publicFiles = @(Get-ChildItem -Path (Join-Path $PSScriptRoot 'Public') -Filter '*.ps1' -ErrorAction SilentlyContinue)

foreach ($file in @($privateFiles + $publicFiles)) {
    try {
        . $file.FullName
    }
    catch {
        throw "StormatrixVMware: cannot load $($file.FullName): $($_.Exception.Message)"
    }
}

# The connection made by Connect-StormatrixVMware, closed by Disconnect-StormatrixVMware.
$script:StormatrixVIServer = $null

Export-ModuleMember -Function ($publicFiles | ForEach-Object { $_.BaseName })
