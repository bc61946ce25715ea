# The one entry point the Python vmware backend runs: pwsh -NoLogo -NoProfile -NonInteractive -File <this file>.
# It reads ONE JSON request from standard input and writes ONE JSON response on the last line of standard
# output, prefixed with 'STORMATRIX-JSON:' (PowerCLI and the console host may print warnings to stdout;
# the prefix keeps them apart). Nothing a caller sends becomes script text: the command name is checked
# against a fixed list and the parameters are splatted as data (see Invoke-StormatrixVMwareRequest).
# Exit code: 0 the request succeeded, 1 it failed (the response says why), 2 the module did not load.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
try {
    Import-Module -Name (Join-Path $PSScriptRoot 'StormatrixVMware.psd1') -Force
}
catch {
    $failure = [ordered]@{
        schema  = 'stormatrix/vmware-1'
        ok      = $false
        command = $null
        error   = [ordered]@{ id = 'Stormatrix.VMware.ModuleLoadFailed'; category = 'NotInstalled'; message = $_.Exception.Message; powercli = $null }
    }
    [Console]::Out.WriteLine('STORMATRIX-JSON:' + (ConvertTo-Json -InputObject $failure -Depth 4 -Compress))
    exit 2
}
$requestText = [Console]::In.ReadToEnd()
# Each object a command writes is printed at once on its own 'STORMATRIX-ITEM:' line (flushed), so that the
# caller can journal a VM or disk the fleet functions created before the next one is made.
$onItem = {
    [Console]::Out.WriteLine('STORMATRIX-ITEM:' + (ConvertTo-Json -InputObject $_ -Depth 8 -Compress))
    [Console]::Out.Flush()
}
$response = Invoke-StormatrixVMwareRequest -RequestJson $requestText -OnItem $onItem
[Console]::Out.WriteLine('STORMATRIX-JSON:' + $response.Json)
if ($response.Ok) {
    exit 0
}
exit 1
