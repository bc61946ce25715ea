# The StormatrixVMware module's own rules (same as the guest module's Compliance.Tests.ps1) (STYLE.md, PowerShell): help and a test for every public function, one function
# per file named after it, the manifest exports exactly Public/, the parameters Python sends by name
# exist, syntax valid for Windows PowerShell 5.1, and PSScriptAnalyzer clean when it is installed.
BeforeDiscovery {
    $moduleRoot = Join-Path $PSScriptRoot '../../windows/StormatrixVMware'
    $script:publicFunctions = @(Get-ChildItem -Path (Join-Path $moduleRoot 'Public') -Filter '*.ps1' | ForEach-Object { @{ Name = $_.BaseName; Path = $_.FullName } })
    $script:allFiles = @(Get-ChildItem -Path $moduleRoot -Filter '*.ps*1' -Recurse | ForEach-Object { @{ Name = $_.Name; Path = $_.FullName } })
    $script:haveAnalyzer = [bool]((Get-Module -Name PSScriptAnalyzer) -or (Get-Module -ListAvailable -Name PSScriptAnalyzer))
    # What harness/backends/vmware.py passes, by function (keep in step with PYTHON_CALLS there).
    $script:pythonCalls = @(
        @{ Function = 'Connect-StormatrixVMware'; Parameters = @('Server', 'CredentialSource', 'UserVariable', 'PasswordVariable', 'CredentialStoreUser', 'VerifyCertificate') }
        @{ Function = 'Get-StormatrixVMwareLayout'; Parameters = @('VMName', 'DiskName') }
        @{ Function = 'Set-StormatrixVMwareController'; Parameters = @('VMName', 'DiskName', 'Type', 'KeepControllerKey', 'ReadyTimeoutSeconds') }
        @{ Function = 'Restore-StormatrixVMwareLayout'; Parameters = @('VMName', 'DiskName', 'ControllerKey', 'ControllerType', 'KeepControllerKey', 'Filename', 'PowerState', 'UnitNumber', 'ReadyTimeoutSeconds') }
        @{ Function = 'Get-StormatrixVMwareHostTuning'; Parameters = @('VMHost', 'Device') }
        @{ Function = 'Set-StormatrixVMwareHostTuning'; Parameters = @('VMHost', 'Device', 'SchedNumReqOutstanding', 'LatencySensitiveThreshold') }
        @{ Function = 'Get-StormatrixVMwareCpuUsage'; Parameters = @('VMName', 'VMHost', 'Start', 'Finish', 'WaitSeconds') }
    )
}

BeforeAll {
    $script:moduleRoot = Join-Path $PSScriptRoot '../../windows/StormatrixVMware'
    Import-Module -Name (Join-Path $script:moduleRoot 'StormatrixVMware.psd1') -Force
    $script:testText = (Get-ChildItem -Path $PSScriptRoot -Filter '*.Tests.ps1' | Where-Object Name -Like 'StormatrixVMware*' | Where-Object Name -NE 'StormatrixVMware.Compliance.Tests.ps1' | Get-Content -Raw) -join "`n"
}

Describe 'Public function <Name>' -ForEach $script:publicFunctions {
    It 'Should be defined once, by a file named after it' {
        $ast = [System.Management.Automation.Language.Parser]::ParseFile($Path, [ref]$null, [ref]$null)
        $functions = @($ast.FindAll({ param($n) $n -is [System.Management.Automation.Language.FunctionDefinitionAst] -and $n.Parent.Parent.Parent -eq $ast }, $false))
        $functions.Count | Should -Be 1
        $functions[0].Name | Should -BeExactly $Name
    }
    It 'Should have help with synopsis, description, an example and every parameter' {
        $help = Get-Help -Name $Name -Full
        $help.Synopsis | Should -Not -BeNullOrEmpty
        $help.Synopsis | Should -Not -BeLike "$Name *" -Because 'an auto-generated synopsis means no comment-based help'
        $help.Description | Should -Not -BeNullOrEmpty
        @($help.Examples.Example).Count | Should -BeGreaterThan 0
        $common = [System.Management.Automation.Cmdlet]::CommonParameters + [System.Management.Automation.Cmdlet]::OptionalCommonParameters
        foreach ($parameter in (Get-Command -Name $Name).Parameters.Keys | Where-Object { $common -notcontains $_ }) {
            $entry = @($help.Parameters.Parameter | Where-Object Name -EQ $parameter)
            ($entry.Description.Text -join '') | Should -Not -BeNullOrEmpty -Because "parameter $parameter needs a .PARAMETER entry"
        }
    }
    It 'Should have a unit test' {
        $script:testText | Should -Match ("Describe '" + [regex]::Escape($Name))
    }
}

Describe 'Module manifest' {
    It 'Should export exactly the Public functions' {
        $manifest = Import-PowerShellDataFile -Path (Join-Path $script:moduleRoot 'StormatrixVMware.psd1')
        $public = @(Get-ChildItem -Path (Join-Path $script:moduleRoot 'Public') -Filter '*.ps1' | ForEach-Object BaseName | Sort-Object)
        @($manifest.FunctionsToExport | Sort-Object) | Should -Be $public
        @((Get-Module StormatrixVMware).ExportedFunctions.Keys | Sort-Object) | Should -Be $public
    }
}

Describe 'Parameters Python passes to <Function>' -ForEach $script:pythonCalls {
    It 'Should exist with these names' {
        $command = Get-Command -Name $Function -Module StormatrixVMware
        foreach ($parameter in $Parameters) {
            $command.Parameters.Keys | Should -Contain $parameter
        }
    }
}

Describe 'File <Name>' -ForEach $script:allFiles {
    It 'Should parse without errors' {
        $errors = $null
        $null = [System.Management.Automation.Language.Parser]::ParseFile($Path, [ref]$null, [ref]$errors)
        $errors | Should -BeNullOrEmpty
    }
    It 'Should use no syntax newer than Windows PowerShell 5.1' {
        $ast = [System.Management.Automation.Language.Parser]::ParseFile($Path, [ref]$null, [ref]$null)
        $newer = @($ast.FindAll({ param($n)
                    $n -is [System.Management.Automation.Language.TernaryExpressionAst] -or
                    $n -is [System.Management.Automation.Language.PipelineChainAst] -or
                    ($n -is [System.Management.Automation.Language.BinaryExpressionAst] -and $n.Operator -eq 'QuestionQuestion') -or
                    ($n -is [System.Management.Automation.Language.AssignmentStatementAst] -and $n.Operator -eq 'QuestionQuestionEquals') -or
                    ($n -is [System.Management.Automation.Language.MemberExpressionAst] -and $n.NullConditional)
                }, $true))
        $newer | Should -BeNullOrEmpty
    }
    It 'Should be clean under PSScriptAnalyzer' -Skip:(-not $script:haveAnalyzer) {
        $settings = Join-Path $PSScriptRoot 'PSScriptAnalyzerSettings.psd1'
        $findings = @(Invoke-ScriptAnalyzer -Path $Path -Settings $settings)
        ($findings | ForEach-Object { "$($_.RuleName) line $($_.Line): $($_.Message)" }) | Should -BeNullOrEmpty
    }
}
