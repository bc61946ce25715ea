function Invoke-StormatrixGuestValidationPester {
    <#
    .SYNOPSIS
    Runs the guest checks through Pester 5 (Validation\Guest.Validation.Tests.ps1) and returns one
    result per check, in the shape of the built-in runner's.

    .NOTES
    Needs Pester 5 in the guest (Initialize-StormatrixGuest -PesterSource installs it). The checks it runs
    are Get-StormatrixGuestCheck's, the same list the built-in runner runs; tests/windows/test_winrm_guest_module.py
    and tests/harness/executors/test_winrm_e2e.py run both against the fake Windows guest with Pester 5.7.1 installed there
    and compare them check by check.
    #>
    [CmdletBinding()]
    [OutputType([pscustomobject])]
    param(
        [Parameter(Mandatory)][hashtable]$Settings
    )
    $pester = @(Get-Module -ListAvailable -Name Pester | Where-Object { $_.Version.Major -ge 5 } | Sort-Object Version -Descending)
    if ($pester.Count -eq 0) {
        throw (New-StormatrixError -ErrorId 'PesterMissing' -ExceptionType 'ItemNotFound' -Category 'NotInstalled' `
                -Message 'Pester 5 is not installed in the guest (Windows ships 3.4). Fix: leave -Runner out (the built-in runner needs no Pester), or Initialize-StormatrixGuest -PesterSource <folder of Pester 5>')
    }
    Import-Module -Name $pester[0].Path -Force -ErrorAction Stop
    $root = Split-Path -Parent $PSScriptRoot
    $data = $Settings.Clone()
    $data['ModulePath'] = Join-Path $root 'StormatrixGuest.psd1'
    $configuration = New-PesterConfiguration
    $configuration.Run.Container = New-PesterContainer -Path (Join-Path (Join-Path $root 'Validation') 'Guest.Validation.Tests.ps1') -Data $data
    $configuration.Run.PassThru = $true
    $configuration.Output.Verbosity = 'None'
    $result = Invoke-Pester -Configuration $configuration
    foreach ($test in @($result.Tests)) {
        $message = ''
        if ($test.ErrorRecord -and @($test.ErrorRecord).Count -gt 0) {
            $message = @($test.ErrorRecord)[0].Exception.Message
        }
        $block, $name = ([string]$test.ExpandedName) -split ' / ', 2
        [pscustomobject]@{ Name = [string]$name; Block = [string]$block; Result = [string]$test.Result; Message = [string]$message }
    }
}
