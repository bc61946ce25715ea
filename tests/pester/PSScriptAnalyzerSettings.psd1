# PSScriptAnalyzer settings for both modules (tests/pester/Compliance.Tests.ps1 runs the analyzer where pwsh
# has it: a PowerShell Gallery package that NuGet does not serve, so elsewhere the test is skipped and says
# why). Default rules,
# plus syntax compatibility: StormatrixGuest runs on Windows PowerShell 5.1 and PowerShell 7; for
# StormatrixVMware (PowerShell 7.2+ only) the compliance suite narrows TargetVersions to 7.0.
# Data only (no expressions), so Import-PowerShellDataFile and the parser's SafeGetValue both read it.
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
