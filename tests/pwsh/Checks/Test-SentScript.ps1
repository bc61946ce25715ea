# Checks the script texts the Python side sends, on pwsh; called by tests/windows/test_pwsh_sent_scripts.py.
#   Test-SentScript.ps1 <folder>
# <folder>/index.tsv has one line per script: file <TAB> target (guest|workstation) <TAB> purpose; the
# scripts are the files next to it, exactly as the product built them (decoded from -EncodedCommand).
# <folder>/calls.tsv (optional): module <TAB> purpose <TAB> command line to bind, for calls whose
# parameters travel as data (JSON), so the call is only visible once the data is read.
# Prints one finding per line, tab-separated: KIND, purpose, detail. KINDs: SCRIPT (one per script read),
# PARSE, PS51 (guest scripts run on Windows PowerShell 5.1), UNKNOWN (a command nothing provides),
# CALL (a module call found in a script), CALLDATA (a splatted call rebuilt from its JSON), BIND (a binding problem),
# SOURCE (a provider folder is missing).
param([Parameter(Mandatory)][string]$Folder)
$ErrorActionPreference = 'Stop'
Import-Module -Name ([System.IO.Path]::Combine($PSScriptRoot, 'StormatrixChecks.psm1')) -Force
$out = [System.Collections.Generic.List[string]]::new()
function Add-Finding([string]$Kind, [string]$Purpose, [string]$Detail) { $out.Add(($Kind, $Purpose, ($Detail -replace '[\t\r\n]+', ' ')) -join "`t") }

$source = Get-StormatrixCommandSource
foreach ($p in $source.Problems) { Add-Finding 'SOURCE' '-' $p }

# the sent scripts
$sent = [System.Collections.Generic.List[object]]::new()
foreach ($line in [System.IO.File]::ReadAllLines([System.IO.Path]::Combine($Folder, 'index.tsv'))) {
    if (-not $line) { continue }
    $file, $target, $purpose = $line.Split("`t")
    $text = [System.IO.File]::ReadAllText([System.IO.Path]::Combine($Folder, $file))
    $parsed = Get-StormatrixParsedText -Text $text -Name $purpose
    $sent.Add($parsed)
    Add-Finding 'SCRIPT' $purpose $target
    foreach ($e in @(Format-StormatrixParseError -Parsed $parsed)) { Add-Finding 'PARSE' $purpose $e }
    if ($target -eq 'guest') {
        foreach ($f in @(Find-StormatrixPs51Problem -Parsed $parsed)) { Add-Finding 'PS51' $purpose $f.Message }
    }
    foreach ($u in @(Get-StormatrixUnknownCommand -Parsed $parsed -Source $source)) { Add-Finding 'UNKNOWN' $purpose $u }
}

# module calls: the ones written in the scripts, and the ones whose parameters travel as data
$scopes = @{}
foreach ($module in 'StormatrixGuest', 'StormatrixVMware') {
    $files = @(Get-StormatrixPowerShellFile -Folder "windows/$module" -Extension '.ps1', '.psm1')
    $scopes[$module] = @{
        Scope     = New-StormatrixFunctionModule -Name "StormatrixChecks.Sent.$module" -Path $files
        Functions = @(Get-StormatrixFunctionDefinition -Path $files | ForEach-Object { $_.Name })
        Public    = @(foreach ($p in [System.IO.Directory]::GetFiles([System.IO.Path]::Combine((Get-StormatrixRepoRoot), 'windows', $module, 'Public'), '*.ps1')) { [System.IO.Path]::GetFileNameWithoutExtension($p) })
    }
}
$callsFile = [System.IO.Path]::Combine($Folder, 'calls.tsv')
$dataCalls = if ([System.IO.File]::Exists($callsFile)) { [System.IO.File]::ReadAllLines($callsFile) } else { @() }
foreach ($line in $dataCalls) {
    if (-not $line) { continue }
    $module, $purpose, $text = $line.Split("`t")
    $parsed = Get-StormatrixParsedText -Text $text -Name $purpose
    foreach ($e in @(Format-StormatrixParseError -Parsed $parsed)) { Add-Finding 'BIND' $purpose $e }
    foreach ($use in @(Get-StormatrixCommandUse -Parsed $parsed)) {
        Add-Finding 'CALL' $purpose $use.Name
        if ($scopes[$module].Public -notcontains $use.Name) { Add-Finding 'BIND' $purpose "$($use.Name) is not a public function of $module" }
        foreach ($r in @(Get-StormatrixBindingProblem -Module $scopes[$module].Scope -Call @($use))) {
            foreach ($problem in $r.Problems) { Add-Finding 'BIND' $purpose "$($r.Command): $problem" }
        }
    }
}
foreach ($parsed in $sent) {
    # the parameters a call script splats: the JSON inside its [Convert]::FromBase64String('...') constant
    $dataNames = @(foreach ($m in $parsed.Ast.FindAll({ param($n) $n -is [System.Management.Automation.Language.InvokeMemberExpressionAst] -and $n.Static -and
                    $n.Member.Extent.Text -eq 'FromBase64String' -and @($n.Arguments).Count -eq 1 -and $n.Arguments[0] -is [System.Management.Automation.Language.StringConstantExpressionAst] }, $true)) {
            try { $doc = [System.Text.Json.JsonDocument]::Parse([System.Text.Encoding]::UTF8.GetString([System.Convert]::FromBase64String($m.Arguments[0].Value)), [System.Text.Json.JsonDocumentOptions]::new()) }
            catch { Add-Finding 'BIND' $parsed.Name "the base64 parameter blob is not JSON: $($_.Exception.Message)"; continue }
            if ($doc.RootElement.ValueKind -eq 'Object') { foreach ($p in $doc.RootElement.EnumerateObject()) { $p.Name } }
        })
    foreach ($use in @(Get-StormatrixCommandUse -Parsed $parsed)) {
        $module = @($scopes.Keys | Where-Object { $scopes[$_].Functions -contains $use.Name })
        if (-not $module) { continue }
        Add-Finding 'CALL' $parsed.Name $use.Name
        $call = $use
        $splat = @($use.Ast.CommandElements | Where-Object { $_ -is [System.Management.Automation.Language.VariableExpressionAst] -and $_.Splatted })
        if ($splat.Count -and $dataNames.Count) {
            # bind the call as the module will see it once the JSON is splatted: by the names in the JSON
            $text = $use.Name + (-join @($dataNames | ForEach-Object { " -$($_):`$v" }))
            $call = @(Get-StormatrixCommandUse -Parsed (Get-StormatrixParsedText -Text $text -Name $parsed.Name))[0]
            Add-Finding 'CALLDATA' $parsed.Name $text
        }
        if ($scopes[$module[0]].Public -notcontains $use.Name) { Add-Finding 'BIND' $parsed.Name "$($use.Name) is not a public function of $($module[0])" }
        foreach ($r in @(Get-StormatrixBindingProblem -Module $scopes[$module[0]].Scope -Call @($call))) {
            foreach ($problem in $r.Problems) { Add-Finding 'BIND' $parsed.Name "$($r.Command): $problem" }
        }
    }
}

[Console]::Out.Write(($out -join "`n") + "`n")
