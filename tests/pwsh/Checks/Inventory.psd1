# Native executables the project's PowerShell calls on purpose by a constant name (through
# Invoke-StormatrixNative -FilePath). fio and diskspd are called by a path the caller passes, so they never
# appear as a constant; PowerCLI's esxcli goes through Get-EsxCli. Every other command must come from the
# engine, a stand-in, a module, a fake or PesterLite: those lists are read from their source, not kept here.
@{
    NativeExecutables = @{
        'powercfg.exe' = 'Windows power-plan tool (Get-StormatrixPowerPlan, Initialize-StormatrixGuest)'
    }
}
