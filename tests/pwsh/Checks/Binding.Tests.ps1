# Every call to a module function binds statically (the engine's StaticParameterBinder): no unknown,
# ambiguous or repeated parameter, no stray positional argument, and some parameter set gets all its
# mandatory parameters. Calls are bound inside the module's scope (private functions resolve as they do
# in the module), from the module's own files. One test per call site, named file:line. The calls the
# Python side sends are bound by tests/windows/test_pwsh_sent_scripts.py.
BeforeDiscovery {
    Import-Module -Name ([System.IO.Path]::Combine($PSScriptRoot, 'StormatrixChecks.psm1')) -Force
    $script:sites = foreach ($module in 'StormatrixGuest', 'StormatrixVMware') {
        $files = @(Get-StormatrixPowerShellFile -Folder "windows/$module" -Extension '.ps1', '.psm1')
        $functions = @(Get-StormatrixFunctionDefinition -Path $files | ForEach-Object { $_.Name })
        foreach ($f in $files) {
            foreach ($use in @(Get-StormatrixCommandUse -Parsed (Get-StormatrixParsedFile -Path $f))) {
                if ($use.Kind -eq 'Command' -and $functions -contains $use.Name) {
                    @{ Module = $module; Site = $use.Site; Command = $use.Name }
                }
            }
        }
    }
    $script:samples = foreach ($use in @(Get-StormatrixCommandUse -Parsed (Get-StormatrixParsedFile -Path ([System.IO.Path]::Combine($PSScriptRoot, 'samples', 'binding', 'Calls.ps1'))))) {
        $line = $use.Ast.Parent.Extent.StartScriptPosition.Line
        if ($line -match '# expect: (.+)$' -and $use.Ast.Parent.PipelineElements[0] -eq $use.Ast) {
            @{ Site = $use.Site; Call = $use.Ast.Parent.Extent.Text; Expect = $Matches[1].Trim() }
        }
    }
}

BeforeAll {
    Import-Module -Name ([System.IO.Path]::Combine($PSScriptRoot, 'StormatrixChecks.psm1')) -Force
    # bind every call site once, per module, and look the results up by site
    $script:bindings = @{}
    foreach ($module in 'StormatrixGuest', 'StormatrixVMware') {
        $files = @(Get-StormatrixPowerShellFile -Folder "windows/$module" -Extension '.ps1', '.psm1')
        $functions = @(Get-StormatrixFunctionDefinition -Path $files | ForEach-Object { $_.Name })
        $calls = foreach ($f in $files) {
            Get-StormatrixCommandUse -Parsed (Get-StormatrixParsedFile -Path $f) | Where-Object { $_.Kind -eq 'Command' -and $functions -contains $_.Name }
        }
        $scope = New-StormatrixFunctionModule -Name "StormatrixChecks.$module" -Path $files
        foreach ($r in @(Get-StormatrixBindingProblem -Module $scope -Call @($calls))) {
            if ($script:bindings.ContainsKey($r.Site)) { $script:bindings[$r.Site] += @($r) } else { $script:bindings[$r.Site] = @($r) }
        }
    }
    $sampleDir = [System.IO.Path]::Combine($PSScriptRoot, 'samples', 'binding')
    $script:sampleScope = New-StormatrixFunctionModule -Name 'StormatrixChecks.BindingSample' -Path ([System.IO.Path]::Combine($sampleDir, 'Functions.ps1'))
    $calls = @(Get-StormatrixCommandUse -Parsed (Get-StormatrixParsedFile -Path ([System.IO.Path]::Combine($sampleDir, 'Calls.ps1'))))
    $script:sampleResults = @{}
    foreach ($r in @(Get-StormatrixBindingProblem -Module $script:sampleScope -Call $calls)) {
        if (-not $script:sampleResults.ContainsKey($r.Site)) { $script:sampleResults[$r.Site] = $r }
    }
}

Describe 'Static binding of module calls' {
    It 'Should find the calls between module functions' {
        @($script:bindings.Keys).Count | Should -BeGreaterThan 40
    }

    It 'Should bind <Command> at <Site>' -ForEach $sites {
        @($script:bindings[$Site] | Where-Object { $_.Command -eq $Command } | ForEach-Object { $_.Problems }) | Should -BeNullOrEmpty
    }
}

Describe 'The binding check' {
    It 'Should report <Expect> for <Call>' -ForEach $samples {
        $problems = @($script:sampleResults[$Site].Problems)
        if ($Expect -eq 'ok') { $problems | Should -BeNullOrEmpty }
        else { ($problems -join "`n") | Should -Match ([regex]::Escape($Expect)) }
    }
}
