# Checks that a guest can run a stormatrix matrix, as a Pester 5 suite (Invoke-StormatrixGuestValidation
# -Runner Pester, or Invoke-Pester with a container holding these parameters). The checks themselves are
# one list, Get-StormatrixGuestCheck, which Invoke-StormatrixGuestValidation also runs without Pester;
# every failure message says how to fix it.
# Run under Pester 5.7.1 against the fake Windows guest by tests/windows/test_winrm_guest_module.py and
# tests/harness/executors/test_winrm_e2e.py (stormatrix guest check --runner pester).
param(
    [Parameter(Mandatory)][string]$Serial,
    [string]$Controller = '',
    [ValidateSet('fio', 'diskspd')][string]$Engine = 'fio',
    [string]$FioPath = 'C:\Program Files\fio\fio.exe',
    [string]$DiskSpdPath = 'C:\Program Files\DiskSpd\diskspd.exe',
    [string]$ModulePath = (Join-Path (Split-Path -Parent $PSScriptRoot) 'StormatrixGuest.psd1')
)

BeforeDiscovery {
    # the module already loaded from that folder (Invoke-StormatrixGuestValidation -Runner Pester runs
    # this file from inside it): re-importing it with -Force would replace the module that is running
    $folder = Split-Path -Parent (Resolve-Path -LiteralPath $ModulePath).ProviderPath
    $module = @(Get-Module -Name StormatrixGuest | Where-Object { $_.ModuleBase -eq $folder })[0]
    if (-not $module) { $module = Import-Module -Name $ModulePath -PassThru }
    $checks = @(& $module { param($c, $e) Get-StormatrixGuestCheck -Controller $c -Engine $e } $Controller $Engine)
}

BeforeAll {
    $folder = Split-Path -Parent (Resolve-Path -LiteralPath $ModulePath).ProviderPath
    $module = @(Get-Module -Name StormatrixGuest | Where-Object { $_.ModuleBase -eq $folder })[0]
    if (-not $module) { $module = Import-Module -Name $ModulePath -PassThru }
    $context = & $module { param($a) New-StormatrixCheckContext @a } @{
        Serial = $Serial; Controller = $Controller; Engine = $Engine; FioPath = $FioPath; DiskSpdPath = $DiskSpdPath }
}

Describe 'Guest validation' {
    foreach ($check in $checks) {
        It "$($check.Block) / $($check.Name)" -Skip:([bool]$check.Skip) -TestCases @($check) {
            & $Test $context
        }
    }
}
