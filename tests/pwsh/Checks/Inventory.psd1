# Commands the project's PowerShell calls on purpose that no folder of the test engine provides, each with
# where it comes from in the field and who calls it. Every other command must come from the engine, a
# stand-in, a module, a fake or PesterLite: those lists are read from their source, not kept here.
@{
    # native executables called by a constant name (through Invoke-StormatrixNative -FilePath). fio and
    # diskspd are called by a path the caller passes, so they never appear as a constant; PowerCLI's esxcli
    # goes through Get-EsxCli.
    NativeExecutables = @{
        'powercfg.exe' = 'Windows power-plan tool (Get-StormatrixPowerPlan, Initialize-StormatrixGuest)'
    }
    # commands of modules installed in the field: Pester 5 in the guest, for the -Runner Pester branch of
    # the guest validation (Invoke-StormatrixGuestValidationPester); the engine runs the same checks with the
    # module's built-in runner, and PesterLite has no configuration or container objects.
    ExternalCommands  = @{
        'New-PesterConfiguration' = 'Pester 5 in the guest (Invoke-StormatrixGuestValidationPester)'
        'New-PesterContainer'     = 'Pester 5 in the guest (Invoke-StormatrixGuestValidationPester)'
        'Invoke-Pester'           = 'Pester 5 in the guest (Invoke-StormatrixGuestValidationPester)'
    }
}
