# Commands the project's PowerShell calls on purpose that no folder of the tests provides, each with where
# it comes from in the field and who calls it. Every other command must come from pwsh, a module, a fake
# (Windows guest, PowerCLI) or Pester 5: those lists are read from their source, not kept here.
@{
    # native executables called by a constant name (through Invoke-StormatrixNative -FilePath). fio and
    # diskspd are called by a path the caller passes, so they never appear as a constant; PowerCLI's esxcli
    # goes through Get-EsxCli.
    NativeExecutables = @{
        'powercfg.exe' = 'Windows power-plan tool (Get-StormatrixPowerPlan, Initialize-StormatrixGuest)'
    }
    # commands of modules installed in the field that the tests do not provide (none today: Pester's
    # commands, which the guest's -Runner Pester branch calls, are read from Pester 5.7.1 itself)
    ExternalCommands  = @{}
}
