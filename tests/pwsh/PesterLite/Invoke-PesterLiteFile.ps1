<#
Runs one *.Tests.ps1 file with PesterLite in this (fresh) PowerShell process and writes its results as
JSON to -ResultPath: one object per test {File, Path, Result (Passed/Failed/Skipped), Message,
ErrorLine, Line, Duration}. Invoke-EngineTests.ps1 starts one process per file, so modules, mocks and
global state of one file cannot leak into another.
#>
param(
    [Parameter(Mandatory)] [string] $Path,
    [Parameter(Mandatory)] [string] $ResultPath,
    [string[]] $Tag = @(),
    [string[]] $ExcludeTag = @(),
    # a JSON file with the container's data (Invoke-Pester -Container (New-PesterContainer -Data ...))
    [string] $DataPath
)
. ([System.IO.Path]::Combine($PSScriptRoot, 'PesterLite.ps1'))
$data = @{}
if ($DataPath) {
    $json = ConvertFrom-Json -InputObject ([System.IO.File]::ReadAllText($DataPath)) -AsHashtable
    foreach ($k in $json.Keys) { $data[$k] = $json[$k] }
}
$results = @(Invoke-PesterLiteContainer -Path $Path -Tag $Tag -ExcludeTag $ExcludeTag -Data $data)
[System.IO.File]::WriteAllText($ResultPath, (ConvertTo-Json -InputObject $results -Depth 3), [System.Text.UTF8Encoding]::new($false))
exit 0
