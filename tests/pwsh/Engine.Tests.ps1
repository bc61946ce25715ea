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
    function script:Start-Child {
        # starts the engine with the given arguments; all of this file's children start at once in
        # BeforeAll (their start-up dominates), and each test waits for its own
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
        [pscustomobject]@{ Process = $p; Out = $p.StandardOutput.ReadToEndAsync(); Err = $p.StandardError.ReadToEndAsync() }
    }
    function script:Wait-Child {
        # stdout and stderr separately, and the exit code, of a child started by Start-Child
        param([string] $Key)
        $run = $script:runs[$Key]
        $run.Process.WaitForExit()
        [pscustomobject]@{ Out = $run.Out.Result -replace "`r`n", "`n"; Err = $run.Err.Result -replace "`r`n", "`n"; Code = $run.Process.ExitCode }
    }
    function script:New-Script {
        param([string] $Name, [string] $Text)
        $path = Join-Path $TestDrive $Name
        [System.IO.File]::WriteAllText($path, $Text, [System.Text.UTF8Encoding]::new($false))
        $path
    }

    $sh = (Get-Command -Name sh -CommandType Application -ErrorAction Ignore | Select-Object -First 1).Source
    $params = New-Script 'params.ps1' "param([switch]`$Flag, [string]`$Name, [int]`$Count, [string]`$Rest)`n`"flag=`$Flag name=[`$Name] count=`$Count rest=[`$Rest]`""
    $switch = New-Script 'sw.ps1' "param([switch]`$Flag)`n`"flag=`$Flag`""
    $script:wherePath = New-Script 'where.ps1' '"$PSScriptRoot|$PSCommandPath"'
    $encoded = [Convert]::ToBase64String([System.Text.Encoding]::Unicode.GetBytes("[Console]::Out.WriteLine('encoded é ok'); exit 4"))
    $inform = "Write-Warning 'careful'; Write-Verbose 'chatty' -Verbose; Write-Verbose 'hidden'; " +
        "function Inform { [CmdletBinding()] param() `$PSCmdlet.WriteInformation('informed', @()) }; Inform -InformationAction Continue; Inform"
    $plan = [ordered]@{
        exit = @('-File', (New-Script 'exit.ps1' 'exit 7'))
        fexit = @('-File', (New-Script 'fexit.ps1' "function f { exit 9 }`nf`n'not reached'"))
        throw = @('-File', (New-Script 'throw.ps1' "'before'`nthrow 'it broke'"))
        nonterm = @('-File', (New-Script 'nonterm.ps1' "Write-Error 'soft failure'`n'after'"))
        missing = @('-File', (Join-Path $TestDrive 'missing.ps1'))
        parse = @('-File', (New-Script 'parse.ps1' 'if ($x {'))
        params = @('-File', $params, '-Flag', '-Name', "it's a `$name with spaces", '-Count:3', 'last')
        swFalse = @('-File', $switch, '-Flag:$false')
        swFalseWord = @('-File', $switch, '-Flag:false')
        swTrue = @('-File', $switch, '-Flag:$true')
        negative = @('-File', (New-Script 'neg.ps1' "param([int]`$N)`n`"n=`$N`""), '-N', '-5')
        where = @('-File', $script:wherePath)
        cmdExit = @('-Command', 'exit 5')
        cmdFine = @('-Command', "'fine'")
        cmdError = @('-Command', "Write-Error 'x'")
        cmdRecovered = @('-Command', "Write-Error 'x' -ErrorAction SilentlyContinue; 'then fine'")
        cmdThrow = @('-Command', "throw 'stop here'")
        cmdJoined = @('-Command', "'a'", '+', "'b'")
        encoded = @('-EncodedCommand', $encoded)
        version = @('-Version')
        utf8 = @('-Command', "'Grüße 日本 €'; [Console]::Out.WriteLine('ça va')")
        format = @('-Command', "[pscustomobject]@{ Name = 'disk'; Size = 8 }")
        streams = @('-Command', $inform)
        prompt = @('-Command', 'function Need { param([Parameter(Mandatory)] $X) $X }; Need')
    }
    if ($sh) { $plan['native'] = @('-File', (New-Script 'native.ps1' "& '$sh' -c 'exit 3'`n`"code `$LASTEXITCODE`"")) }
    $script:runs = @{}
    foreach ($key in $plan.Keys) { $script:runs[$key] = Start-Child -Arguments $plan[$key] }
    $script:runs['stdin'] = Start-Child -Arguments '-Command', '-' -StdIn "'from stdin'`n"
}

Describe '-File' {
    It 'Should exit with the script''s exit N' {
        (Wait-Child exit).Code | Should -Be 7
    }
    It 'Should exit with N when a function the script calls runs exit N' {
        $r = Wait-Child fexit
        $r.Code | Should -Be 9
        $r.Out | Should -Not -Match 'not reached'
    }
    It 'Should exit 0 at a normal end, whatever the last native command returned' {
        if (-not $script:runs.ContainsKey('native')) { Set-ItResult -Skipped -Because 'no sh on this machine' }
        $r = Wait-Child native
        $r.Out | Should -Match 'code 3'
        $r.Code | Should -Be 0
    }
    It 'Should exit 1 and write the error to stderr when the script throws' {
        $r = Wait-Child throw
        $r.Code | Should -Be 1
        $r.Out | Should -Match 'before'
        $r.Err | Should -Match 'it broke'
        $r.Out | Should -Not -Match 'it broke'
    }
    It 'Should go on after a non-terminating error, write it to stderr and exit 0' {
        $r = Wait-Child nonterm
        $r.Code | Should -Be 0
        $r.Out | Should -Match 'after'
        $r.Err | Should -Match 'soft failure'
    }
    It 'Should exit 64 and say so when the script file does not exist' {
        $r = Wait-Child missing
        $r.Code | Should -Be 64
        $r.Err | Should -Match 'not recognized as the name of a script file'
    }
    It 'Should exit 1 for a script that does not parse' {
        $r = Wait-Child parse
        $r.Code | Should -Be 1
        $r.Err | Should -Not -BeNullOrEmpty
    }
    It 'Should bind switches, named and quoted values and positional arguments as pwsh does' {
        (Wait-Child params).Out.Trim() | Should -BeExactly "flag=True name=[it's a `$name with spaces] count=3 rest=[last]"
    }
    It 'Should read -Switch:$false and -Switch:false as false' {
        (Wait-Child swFalse).Out.Trim() | Should -Be 'flag=False'
        (Wait-Child swFalseWord).Out.Trim() | Should -Be 'flag=False'
        (Wait-Child swTrue).Out.Trim() | Should -Be 'flag=True'
    }
    It 'Should pass a value that looks like a negative number as a value' {
        (Wait-Child negative).Out.Trim() | Should -Be 'n=-5'
    }
    It 'Should set $PSScriptRoot and $PSCommandPath' {
        (Wait-Child where).Out.Trim() | Should -Be "$([System.IO.Path]::GetDirectoryName($script:wherePath))|$script:wherePath"
    }
}

Describe '-Command and -EncodedCommand' {
    It 'Should exit with exit N' {
        (Wait-Child cmdExit).Code | Should -Be 5
    }
    It 'Should exit 0 when the last statement succeeded and 1 when it failed' {
        (Wait-Child cmdFine).Code | Should -Be 0
        (Wait-Child cmdError).Code | Should -Be 1
        (Wait-Child cmdRecovered).Code | Should -Be 0
    }
    It 'Should exit 1 for a terminating error and write it to stderr' {
        $r = Wait-Child cmdThrow
        $r.Code | Should -Be 1
        $r.Err | Should -Match 'stop here'
    }
    It 'Should join the arguments after -Command into one command' {
        (Wait-Child cmdJoined).Out.Trim() | Should -Be 'ab'
    }
    It 'Should run base64 of UTF-16LE text with -EncodedCommand' {
        $r = Wait-Child encoded
        $r.Out.Trim() | Should -Be 'encoded é ok'
        $r.Code | Should -Be 4
    }
    It 'Should read the command from stdin with -Command -' {
        (Wait-Child stdin).Out | Should -Match 'from stdin'
    }
}

Describe '-Version' {
    It 'Should print PowerShell and the engine''s version' {
        $r = Wait-Child version
        $r.Out.Trim() | Should -Be "PowerShell $($PSVersionTable.PSVersion)"
        $r.Code | Should -Be 0
    }
}

Describe 'Output' {
    It 'Should write non-ASCII text as UTF-8, through Out-Default and through [Console]' {
        $r = Wait-Child utf8
        $r.Out | Should -Match 'Grüße 日本 €'
        $r.Out | Should -Match 'ça va'
    }
    It 'Should format objects as text without ANSI escape sequences' {
        $r = Wait-Child format
        $r.Out | Should -Match 'Name'
        $r.Out | Should -Match 'disk'
        $r.Out | Should -Not -Match "`e\["
    }
    It 'Should write warnings, verbose and information messages as pwsh does when they are shown' {
        $r = Wait-Child streams
        $all = $r.Out + $r.Err
        $all | Should -Match 'WARNING: careful'
        $all | Should -Match 'VERBOSE: chatty'
        $all | Should -Not -Match 'hidden'
        ([regex]::Matches($all, 'informed')).Count | Should -Be 1
    }
    It 'Should refuse to prompt: the session is non-interactive' {
        $r = Wait-Child prompt
        $r.Code | Should -Be 1
        $r.Err | Should -Not -BeNullOrEmpty
    }
}

AfterAll {
    foreach ($run in $script:runs.Values) { if (-not $run.Process.HasExited) { $run.Process.Kill($true) } }
}
