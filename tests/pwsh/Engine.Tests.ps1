# Tests of the PowerShell host's command line (tests/pwsh/host): each starts the same program this test
# runs in ([Environment]::ProcessPath: the hosted engine's apphost, or a real pwsh) as a child process
# and checks what pwsh documents for -File, -Command and -EncodedCommand: exit codes, where errors go,
# argument binding, UTF-8 output. Under a real pwsh the same assertions hold for pwsh itself.

BeforeAll {
    $script:exe = [System.Environment]::ProcessPath
    $script:prefix = @()
    if ([System.IO.Path]::GetFileNameWithoutExtension($script:exe) -eq 'dotnet') {
        $script:prefix = @([Stormatrix.PwshHost.StandInSupport].Assembly.Location)
    }
    function script:Invoke-Child {
        # runs the engine with the given arguments; stdout and stderr separately, and the exit code
        param([string[]] $Arguments, [string] $StdIn)
        $psi = [System.Diagnostics.ProcessStartInfo]::new($script:exe)
        foreach ($a in @($script:prefix) + @('-NoLogo', '-NoProfile', '-NonInteractive') + $Arguments) { $psi.ArgumentList.Add($a) }
        $psi.RedirectStandardOutput = $true
        $psi.RedirectStandardError = $true
        $psi.RedirectStandardInput = $true
        $psi.UseShellExecute = $false
        $psi.StandardOutputEncoding = [System.Text.UTF8Encoding]::new($false)
        $psi.StandardErrorEncoding = [System.Text.UTF8Encoding]::new($false)
        $p = [System.Diagnostics.Process]::Start($psi)
        if ($StdIn) { $p.StandardInput.Write($StdIn) }
        $p.StandardInput.Close()
        $errTask = $p.StandardError.ReadToEndAsync()
        $out = $p.StandardOutput.ReadToEnd()
        $p.WaitForExit()
        [pscustomobject]@{ Out = $out -replace "`r`n", "`n"; Err = $errTask.Result -replace "`r`n", "`n"; Code = $p.ExitCode }
    }
    function script:New-Script {
        param([string] $Name, [string] $Text)
        $path = Join-Path $TestDrive $Name
        [System.IO.File]::WriteAllText($path, $Text, [System.Text.UTF8Encoding]::new($false))
        $path
    }
}

Describe '-File' {
    It 'Should exit with the script''s exit N' {
        (Invoke-Child -Arguments '-File', (New-Script 'exit.ps1' 'exit 7')).Code | Should -Be 7
    }
    It 'Should exit with N when a function the script calls runs exit N' {
        $r = Invoke-Child -Arguments '-File', (New-Script 'fexit.ps1' "function f { exit 9 }`nf`n'not reached'")
        $r.Code | Should -Be 9
        $r.Out | Should -Not -Match 'not reached'
    }
    It 'Should exit 0 at a normal end, whatever the last native command returned' {
        $sh = (Get-Command -Name sh -CommandType Application -ErrorAction Ignore | Select-Object -First 1).Source
        if (-not $sh) { Set-ItResult -Skipped -Because 'no sh on this machine' }
        $r = Invoke-Child -Arguments '-File', (New-Script 'native.ps1' "& '$sh' -c 'exit 3'`n`"code `$LASTEXITCODE`"")
        $r.Out | Should -Match 'code 3'
        $r.Code | Should -Be 0
    }
    It 'Should exit 1 and write the error to stderr when the script throws' {
        $r = Invoke-Child -Arguments '-File', (New-Script 'throw.ps1' "'before'`nthrow 'it broke'")
        $r.Code | Should -Be 1
        $r.Out | Should -Match 'before'
        $r.Err | Should -Match 'it broke'
        $r.Out | Should -Not -Match 'it broke'
    }
    It 'Should go on after a non-terminating error, write it to stderr and exit 0' {
        $r = Invoke-Child -Arguments '-File', (New-Script 'nonterm.ps1' "Write-Error 'soft failure'`n'after'")
        $r.Code | Should -Be 0
        $r.Out | Should -Match 'after'
        $r.Err | Should -Match 'soft failure'
    }
    It 'Should exit 64 and say so when the script file does not exist' {
        $r = Invoke-Child -Arguments '-File', (Join-Path $TestDrive 'missing.ps1')
        $r.Code | Should -Be 64
        $r.Err | Should -Match 'not recognized as the name of a script file'
    }
    It 'Should exit 1 for a script that does not parse' {
        $r = Invoke-Child -Arguments '-File', (New-Script 'parse.ps1' 'if ($x {')
        $r.Code | Should -Be 1
        $r.Err | Should -Not -BeNullOrEmpty
    }
    It 'Should bind switches, named and quoted values and positional arguments as pwsh does' {
        $path = New-Script 'params.ps1' "param([switch]`$Flag, [string]`$Name, [int]`$Count, [string]`$Rest)`n`"flag=`$Flag name=[`$Name] count=`$Count rest=[`$Rest]`""
        $r = Invoke-Child -Arguments '-File', $path, '-Flag', '-Name', "it's a `$name with spaces", '-Count:3', 'last'
        $r.Out.Trim() | Should -BeExactly "flag=True name=[it's a `$name with spaces] count=3 rest=[last]"
    }
    It 'Should read -Switch:$false and -Switch:false as false' {
        $path = New-Script 'sw.ps1' "param([switch]`$Flag)`n`"flag=`$Flag`""
        (Invoke-Child -Arguments '-File', $path, '-Flag:$false').Out.Trim() | Should -Be 'flag=False'
        (Invoke-Child -Arguments '-File', $path, '-Flag:false').Out.Trim() | Should -Be 'flag=False'
        (Invoke-Child -Arguments '-File', $path, '-Flag:$true').Out.Trim() | Should -Be 'flag=True'
    }
    It 'Should pass a value that looks like a negative number as a value' {
        $path = New-Script 'neg.ps1' "param([int]`$N)`n`"n=`$N`""
        (Invoke-Child -Arguments '-File', $path, '-N', '-5').Out.Trim() | Should -Be 'n=-5'
    }
    It 'Should set $PSScriptRoot and $PSCommandPath' {
        $path = New-Script 'where.ps1' '"$PSScriptRoot|$PSCommandPath"'
        (Invoke-Child -Arguments '-File', $path).Out.Trim() | Should -Be "$([System.IO.Path]::GetDirectoryName($path))|$path"
    }
}

Describe '-Command and -EncodedCommand' {
    It 'Should exit with exit N' {
        (Invoke-Child -Arguments '-Command', 'exit 5').Code | Should -Be 5
    }
    It 'Should exit 0 when the last statement succeeded and 1 when it failed' {
        (Invoke-Child -Arguments '-Command', "'fine'").Code | Should -Be 0
        (Invoke-Child -Arguments '-Command', "Write-Error 'x'").Code | Should -Be 1
        (Invoke-Child -Arguments '-Command', "Write-Error 'x' -ErrorAction SilentlyContinue; 'then fine'").Code | Should -Be 0
    }
    It 'Should exit 1 for a terminating error and write it to stderr' {
        $r = Invoke-Child -Arguments '-Command', "throw 'stop here'"
        $r.Code | Should -Be 1
        $r.Err | Should -Match 'stop here'
    }
    It 'Should join the arguments after -Command into one command' {
        (Invoke-Child -Arguments '-Command', "'a'", '+', "'b'").Out.Trim() | Should -Be 'ab'
    }
    It 'Should run base64 of UTF-16LE text with -EncodedCommand' {
        $text = "[Console]::Out.WriteLine('encoded é ok'); exit 4"
        $encoded = [Convert]::ToBase64String([System.Text.Encoding]::Unicode.GetBytes($text))
        $r = Invoke-Child -Arguments '-EncodedCommand', $encoded
        $r.Out.Trim() | Should -Be 'encoded é ok'
        $r.Code | Should -Be 4
    }
    It 'Should read the command from stdin with -Command -' {
        (Invoke-Child -Arguments '-Command', '-' -StdIn "'from stdin'`n").Out | Should -Match 'from stdin'
    }
}

Describe '-Version' {
    It 'Should print PowerShell and the engine''s version' {
        $r = Invoke-Child -Arguments '-Version'
        $r.Out.Trim() | Should -Be "PowerShell $($PSVersionTable.PSVersion)"
        $r.Code | Should -Be 0
    }
}

Describe 'Output' {
    It 'Should write non-ASCII text as UTF-8, through Out-Default and through [Console]' {
        $r = Invoke-Child -Arguments '-Command', "'Grüße 日本 €'; [Console]::Out.WriteLine('ça va')"
        $r.Out | Should -Match 'Grüße 日本 €'
        $r.Out | Should -Match 'ça va'
    }
    It 'Should format objects as text without ANSI escape sequences' {
        $r = Invoke-Child -Arguments '-Command', "[pscustomobject]@{ Name = 'disk'; Size = 8 }"
        $r.Out | Should -Match 'Name'
        $r.Out | Should -Match 'disk'
        $r.Out | Should -Not -Match "`e\["
    }
    It 'Should write warnings, verbose and information messages as pwsh does when they are shown' {
        $command = "Write-Warning 'careful'; Write-Verbose 'chatty' -Verbose; Write-Verbose 'hidden'; " +
            "function Inform { [CmdletBinding()] param() `$PSCmdlet.WriteInformation('informed', @()) }; Inform -InformationAction Continue; Inform"
        $r = Invoke-Child -Arguments '-Command', $command
        $all = $r.Out + $r.Err
        $all | Should -Match 'WARNING: careful'
        $all | Should -Match 'VERBOSE: chatty'
        $all | Should -Not -Match 'hidden'
        ([regex]::Matches($all, 'informed')).Count | Should -Be 1
    }
    It 'Should refuse to prompt: the session is non-interactive' {
        $r = Invoke-Child -Arguments '-Command', 'function Need { param([Parameter(Mandatory)] $X) $X }; Need'
        $r.Code | Should -Be 1
        $r.Err | Should -Not -BeNullOrEmpty
    }
}
