# Tests of the StormatrixVMware module against the data-described fake PowerCLI (tests/pwsh/FakeVCenter): the
# module imports "VMware.VimAutomation.Core" from PSModulePath as it would on a workstation, and every test
# starts from a copy of the fake's lab file (VMs, controllers, disks, esxcli rows, statistics). What the module
# did is read back from that lab: the cmdlets it called in order, their parameters, and the VM afterwards.
# No PowerCLI cmdlet is mocked. Shared set-up of the StormatrixVMware tests (one file per public
# function, dot-sourced in each file's BeforeAll).
#
# Paths of the module that no test here executes, and why:
# - Move-StormatrixVMwareDisk's NvmeNotSupported and Get-StormatrixVMwareControllerList's "no Get-NvmeController"
#   branch: they are for PowerCLI releases older than 12.x, which lack the NVMe cmdlets the fake has.
# - Set-StormatrixVMwareController's NotPowerCycled and Restore-StormatrixVMwareLayout's RestoreIncomplete: safety
#   nets after PowerCLI reported success; the fake, like vSphere, does what a successful call says. The backend's
#   own check of the same answer is tested in tests/harness/backends/test_vmware_backend.py (test_wrong_controller_in_the_answer_is_refused).
# - Set-StormatrixVMwareHostTuning's TuningNotApplied (esxcli accepts a value and keeps the old one) and
#   Set-StormatrixVMwarePower's "Wait-Tools returned nothing without an error": not seen in PowerCLI's documented
#   behaviour, so not modelled.

$script:FakeDir = [System.IO.Path]::GetFullPath([System.IO.Path]::Combine($PSScriptRoot, '..', '..', 'pwsh', 'FakeVCenter'))
$script:SavedModulePath = $env:PSModulePath
$env:PSModulePath = $script:FakeDir + [System.IO.Path]::PathSeparator + $env:PSModulePath
Import-Module -Name ([System.IO.Path]::Combine($PSScriptRoot, '..', '..', '..', 'windows', 'StormatrixVMware', 'StormatrixVMware.psd1')) -Force
$env:SMX_TEST_USER = 'administrator@vsphere.local'
$env:SMX_TEST_PASSWORD = 's3cr3t-Pa55'

. ([System.IO.Path]::Combine($script:FakeDir, 'TestLab.ps1'))

# -Confirm prompts; in a session started with -NonInteractive (make test) the prompt fails instead of
# waiting, which shows that the function asked. Elsewhere those tests are skipped (they would wait).
$script:NonInteractive = @([Environment]::GetCommandLineArgs() | Where-Object { $_ -match '^-noni' }).Count -gt 0

function script:Remove-VMwareTestSetup {
    $env:PSModulePath = $script:SavedModulePath
    Remove-Item -Path Env:SMX_TEST_USER, Env:SMX_TEST_PASSWORD, Env:STORMATRIX_FAKE_VCENTER_LAB -ErrorAction SilentlyContinue
    Remove-Module -Name StormatrixVMware, VMware.VimAutomation.Core -Force -ErrorAction SilentlyContinue
}

# The fleet's run id in the fleet tests, and a fleet of clones made by the module itself for the tests that
# need workers (names smx-w01.., annotated with the run id).
$script:RunId = 'abcdef123456'
function script:New-TestFleet {
    param([int]$Count = 2)
    $names = @(1..$Count | ForEach-Object { 'smx-w{0:d2}' -f $_ })
    $made = @(New-StormatrixVMwareFleet -Name $names -Template smx-worker-tpl -VMHost esx01.lab -RunId $script:RunId -NumCpu 4 -MemoryGB 4)
    [pscustomobject]@{ Ids = @($made | Where-Object Stage -eq 'Configured' | ForEach-Object Id); Base = @($made | ForEach-Object { $_.Disks }) }
}
