# Every command the modules call comes from somewhere the tests can run it: pwsh, a module function, the
# fake Windows guest (tests/pwsh/FakeWindows), the fake PowerCLI (tests/pwsh/FakeVCenter), Pester 5 or a
# native executable / field-only command listed in Inventory.psd1. The lists are read from those folders'
# function definitions. A folder that is missing fails here by name instead of being skipped.
BeforeDiscovery {
    Import-Module -Name ([System.IO.Path]::Combine($PSScriptRoot, 'StormatrixChecks.psm1')) -Force
    $script:files = foreach ($path in (Get-StormatrixPowerShellFile -Folder 'windows')) {
        @{ Name = (Get-StormatrixRelativePath -Path $path); Path = $path }
    }
    $script:folders = foreach ($f in 'tests/pwsh/FakeWindows', 'tests/pwsh/FakeVCenter') { @{ Folder = $f } }
}

BeforeAll {
    Import-Module -Name ([System.IO.Path]::Combine($PSScriptRoot, 'StormatrixChecks.psm1')) -Force
    $script:source = Get-StormatrixCommandSource
}

Describe 'Command inventory' {
    It 'Should read the commands of <Folder>' -ForEach $folders {
        @($script:source.Problems | Where-Object { $_.StartsWith("$Folder ") }) | Should -BeNullOrEmpty
    }

    It 'Should read Pester 5''s commands from Pester itself' {
        @($script:source.Problems | Where-Object { $_.StartsWith('Pester ') }) | Should -BeNullOrEmpty
        foreach ($n in 'Invoke-Pester', 'New-PesterConfiguration', 'Describe', 'It', 'Should', 'BeforeDiscovery') {
            $script:source.Sources[$n] | Should -Contain 'Pester' -Because "$n is a Pester 5 command"
        }
    }

    It 'Should know where every command of <Name> comes from' -ForEach $files {
        Get-StormatrixUnknownCommand -Parsed (Get-StormatrixParsedFile -Path $Path) -Source $script:source | Should -BeNullOrEmpty
    }

    It 'Should flag a command nothing provides' {
        $parsed = Get-StormatrixParsedText -Text "Get-StormatrixNothing -Name x`nInvoke-StormatrixNative -FilePath 'format.com'" -Name 'sample.ps1'
        $unknown = @(Get-StormatrixUnknownCommand -Parsed $parsed -Source $script:source)
        $unknown.Count | Should -Be 2
        $unknown[0] | Should -Match '^sample\.ps1:1: Get-StormatrixNothing '
        $unknown[1] | Should -Match '^sample\.ps1:2: native executable format\.com '
    }

    It 'Should take pwsh''s own cmdlets and the module functions as known' {
        $parsed = Get-StormatrixParsedText -Text "Import-Module x; ForEach-Object { 1 }; ConvertTo-Json 1; Find-StormatrixTestDisk -Serial x; Invoke-StormatrixNative -FilePath 'powercfg.exe'" -Name 'sample.ps1'
        Get-StormatrixUnknownCommand -Parsed $parsed -Source $script:source | Should -BeNullOrEmpty
    }
}
