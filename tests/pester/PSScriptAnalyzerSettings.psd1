# One settings file for the guest module and its tests: default rules plus 5.1/7 syntax compatibility.
@{
    Severity     = @('Error', 'Warning')
    ExcludeRules = @(
        # Pester test files use $script: variables set in BeforeAll and read in It blocks.
        'PSUseDeclaredVarsMoreThanAssignments'
    )
    Rules        = @{
        PSUseCompatibleSyntax = @{
            Enable         = $true
            TargetVersions = @('5.1', '7.0')
        }
    }
}
