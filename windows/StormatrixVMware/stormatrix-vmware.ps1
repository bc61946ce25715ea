# The one entry point the Python vmware backend runs: pwsh -NoLogo -NoProfile -NonInteractive -File <this file>.
# It reads ONE JSON request from standard input and writes ONE JSON response on the last line of standard
# output, prefixed with 'STORMATRIX-JSON:' (PowerCLI and the console host may print warnings to stdout;
# the prefix keeps them apart). Nothing a caller sends becomes script text: the command name is checked
# against a fixed list and the parameters are splatted as data (see Invoke-StormatrixVMwareRequest).
# Exit code: 0 the request succeeded, 1 it failed (the response says why), 2 the module did not load.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
# Standard input and output are UTF-8 on every system, as the caller reads and writes them. [Console]::In and
# ::Out use the console's code page on Windows (437, 850, 1252...), which would garble a password or a VM name
# outside ASCII; streams of our own leave the user's console code page as it is.
$utf8 = [System.Text.UTF8Encoding]::new($false)
$stdin = [System.IO.StreamReader]::new([Console]::OpenStandardInput(), $utf8)
$stdout = [System.IO.StreamWriter]::new([Console]::OpenStandardOutput(), $utf8)
$stdout.AutoFlush = $true
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
    $stdout.WriteLine('STORMATRIX-JSON:' + (ConvertTo-Json -InputObject $failure -Depth 4 -Compress))
    exit 2
}
$requestText = $stdin.ReadToEnd()
# Each object a command writes is printed at once on its own 'STORMATRIX-ITEM:' line (flushed), so that the
# caller can journal a VM or disk the fleet functions created before the next one is made.
$onItem = {
    $stdout.WriteLine('STORMATRIX-ITEM:' + (ConvertTo-Json -InputObject $_ -Depth 8 -Compress))
    $stdout.Flush()
}
$response = Invoke-StormatrixVMwareRequest -RequestJson $requestText -OnItem $onItem
$stdout.WriteLine('STORMATRIX-JSON:' + $response.Json)
if ($response.Ok) {
    exit 0
}
exit 1
