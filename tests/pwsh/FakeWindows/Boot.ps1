# Start-up of powershell.exe in the fake Windows guest: the hosted engine dot-sources this file before
# the command (STORMATRIX_PWSH_STANDINS points here, see fakewindows.py engine_env).
# 1. The console: a powershell.exe whose output is redirected (as under WinRM) writes in the OEM code
#    page of an en-US Windows, 437 - until a script sets [Console]::OutputEncoding.
# 2. The Utility/Management cmdlet stand-ins the engine needs (tests/pwsh/StandIns).
# 3. The fake Windows cmdlets, and the guest's C: and HKLM: drives.
[Console]::OutputEncoding = [Text.Encoding]::GetEncoding(437)
$__fwStandIns = [IO.Path]::Combine($PSScriptRoot, '..', 'StandIns', 'StandIns.ps1')
if ([IO.File]::Exists($__fwStandIns)) { . $__fwStandIns }
elseif ($env:STORMATRIX_GUEST_TEMP_STANDINS) { . $env:STORMATRIX_GUEST_TEMP_STANDINS }
Import-Module ([IO.Path]::Combine($PSScriptRoot, 'Modules', 'FakeWindows', 'FakeWindows.psd1')) -Global
Initialize-FakeWindowsDrive
Remove-Variable -Name __fwStandIns
