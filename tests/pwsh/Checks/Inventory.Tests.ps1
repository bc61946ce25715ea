# Every command the modules call comes from somewhere the tests can run it: the engine, a cmdlet stand-in
# (tests/pwsh/StandIns), a module function, the fake Windows guest (tests/pwsh/FakeWindows), the fake
# PowerCLI (tests/pwsh/FakeVCenter), PesterLite (tests/pwsh/PesterLite) or a native executable listed in
# Inventory.psd1. The lists are read from those folders' function definitions. A folder that is missing
# fails here by name instead of being skipped. (Whether every stand-in is still used, counting the scripts
# the Python side sends, is tests/test_pwsh_sent_scripts.py's.)
BeforeDiscovery {
    Import-Module -Name ([System.IO.Path]::Combine($PSScriptRoot, 'StormatrixChecks.psm1')) -Force
    $script:files = foreach ($path in (Get-StormatrixPowerShellFile -Folder 'windows')) {
        @{ Name = (Get-StormatrixRelativePath -Path $path); Path = $path }
    }
    $script:folders = foreach ($f in 'tests/pwsh/StandIns', 'tests/pwsh/FakeWindows', 'tests/pwsh/FakeVCenter', 'tests/pwsh/PesterLite') { @{ Folder = $f } }
}

BeforeAll {
    Import-Module -Name ([System.IO.Path]::Combine($PSScriptRoot, 'StormatrixChecks.psm1')) -Force
    $script:source = Get-StormatrixCommandSource
}

Describe 'Command inventory' {
    It 'Should read the commands of <Folder>' -ForEach $folders {
        @($script:source.Problems | Where-Object { $_.StartsWith("$Folder ") }) | Should -BeNullOrEmpty
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

    It 'Should take the engine''s own cmdlets and the module functions as known' {
        $parsed = Get-StormatrixParsedText -Text "Import-Module x; ForEach-Object { 1 }; Find-StormatrixTestDisk -Serial x; Invoke-StormatrixNative -FilePath 'powercfg.exe'" -Name 'sample.ps1'
        Get-StormatrixUnknownCommand -Parsed $parsed -Source $script:source | Should -BeNullOrEmpty
    }
}
