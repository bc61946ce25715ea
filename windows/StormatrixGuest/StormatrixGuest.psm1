# StormatrixGuest: runs inside the Windows guest under test (Windows PowerShell 5.1 and PowerShell 7).
# Dot-sources Private/ then Public/ (one function per file) and exports the public functions. The
# manifest lists FunctionsToExport explicitly; a compliance test keeps the two in step.

$privateFiles = @(Get-ChildItem -Path (Join-Path $PSScriptRoot 'Private') -Filter '*.ps1' -ErrorAction SilentlyContinue)
$publicFiles = @(Get-ChildItem -Path (Join-Path $PSScriptRoot 'Public') -Filter '*.ps1' -ErrorAction SilentlyContinue)

foreach ($file in @($privateFiles + $publicFiles)) {
    try {
        . $file.FullName
    }
    catch {
        throw "StormatrixGuest: cannot load $($file.FullName): $($_.Exception.Message)"
    }
}

Export-ModuleMember -Function ($publicFiles | ForEach-Object { $_.BaseName })
