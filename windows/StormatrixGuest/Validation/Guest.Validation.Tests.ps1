# Checks that a guest can run a stormatrix matrix, as a Pester 5 suite (Invoke-StormatrixGuestValidation
# -Runner Pester, or Invoke-Pester with a container holding these parameters). The checks themselves are
# one list, Get-StormatrixGuestCheck, which Invoke-StormatrixGuestValidation also runs without Pester;
# every failure message says how to fix it.
# Not executed by the test suite (needs Pester 5 with containers and -Data; see
# Private/Invoke-StormatrixGuestValidationPester.ps1).
param(
    [Parameter(Mandatory)][string]$Serial,
    [string]$Controller = '',
    [ValidateSet('fio', 'diskspd')][string]$Engine = 'fio',
    [string]$FioPath = 'C:\Program Files\fio\fio.exe',
    [string]$DiskSpdPath = 'C:\Program Files\DiskSpd\diskspd.exe',
    [string]$ModulePath = (Join-Path (Split-Path -Parent $PSScriptRoot) 'StormatrixGuest.psd1')
)

BeforeDiscovery {
    $module = Import-Module -Name $ModulePath -Force -PassThru
    $checks = @(& $module { param($c, $e) Get-StormatrixGuestCheck -Controller $c -Engine $e } $Controller $Engine)
}

BeforeAll {
    $module = Import-Module -Name $ModulePath -Force -PassThru
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
