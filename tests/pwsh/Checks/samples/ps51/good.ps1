# Good sample: 5.1-compatible code, including look-alikes of every rule; no 5.1 rule may flag it.
$size = if ($big) { 4096 } else { 512 }
$name = 'a ?? b && c || d ?. e'   # operators inside strings and comments: ?? && || ?.
if ($null -eq $cache) { $cache = @{} }
$serial = if ($disk) { $disk.SerialNumber } else { $null }
Get-Item -Path $env:TEMP; if ($?) { Write-Output 'ok' }
$p = Join-Path (Join-Path $env:TEMP 'stormatrix') 'payload.b64'
$q = Join-Path -Path $env:TEMP -ChildPath 'x' -Resolve
$o = ConvertFrom-Json -InputObject $text
$json = ConvertTo-Json -InputObject $o -Depth 8 -Compress
$bytes = Get-Content -Path $file -Encoding Byte -ReadCount 0
Set-Content -Path $file -Value $text -Encoding UTF8
Get-Item -Path $file -ErrorAction Stop
if ($PSVersionTable.PSEdition -eq 'Core' -and $IsLinux) { $root = '/tmp' }
if ($PSVersionTable.PSVersion.Major -ge 6) { if ($IsWindows) { $root = $env:SystemDrive } }
$parts = $line.Split(':')
$parts = $line.Split([char]':', [StringSplitOptions]::RemoveEmptyEntries)
$parts = $line -split '::'
$found = $name.IndexOf('disk', [StringComparison]::OrdinalIgnoreCase) -ge 0
$n = $name.Replace('a', 'b')
$p = [System.IO.Path]::Combine($root, 'stormatrix')
$p = [IO.Path]::GetFullPath('x')
$t = [IO.File]::ReadAllText($file)
$h = [Security.Cryptography.SHA256]::Create().ComputeHash($bytes)
$list = New-Object System.Collections.Generic.List[string]
$n = 100L + 0x1F + 1kb + 1.5d
$check = "done `t`n"
enum Size { Small = 1; Large = 2 }
class Worker { [int]$Count }
function Test-Blocks { begin { } process { $_ } end { } }
1..4 | ForEach-Object { $_ * 2 }
$ErrorActionPreference = 'Stop'
