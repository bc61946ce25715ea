# Smaller stand-ins: Start-Sleep, ConvertTo-SecureString, Import-PowerShellDataFile, Get-Process,
# Remove-Variable.

function Start-Sleep {
    # Real: Thread.Sleep in slices, -Seconds accepts fractions (7.x). Partial: Ctrl+C is not observed.
    [CmdletBinding(DefaultParameterSetName = 'Seconds')]
    param(
        [Parameter(ParameterSetName = 'Seconds', Mandatory, Position = 0, ValueFromPipeline, ValueFromPipelineByPropertyName)]
        [ValidateRange(0.0, [double]([int]::MaxValue / 1000))] [double] $Seconds,
        [Parameter(ParameterSetName = 'Milliseconds', Mandatory, ValueFromPipelineByPropertyName)]
        [Alias('ms')] [ValidateRange(0, [int]::MaxValue)] [int] $Milliseconds,
        [Parameter(ParameterSetName = 'FromTimeSpan', Mandatory, ValueFromPipelineByPropertyName)]
        [Alias('ts')] [timespan] $Duration
    )
    process {
        $ms = switch ($PSCmdlet.ParameterSetName) {
            'Seconds' { [int]($Seconds * 1000) }
            'Milliseconds' { $Milliseconds }
            default { [int]$Duration.TotalMilliseconds }
        }
        [System.Threading.Thread]::Sleep($ms)
    }
}

function ConvertTo-SecureString {
    # Real: -AsPlainText copies the characters into a SecureString (-Force is no longer required in 7).
    # Partial: the encrypted forms (-Key/-SecureKey, Windows DPAPI strings) are not supported.
    [CmdletBinding(DefaultParameterSetName = 'Secure')]
    [OutputType([securestring])]
    param(
        [Parameter(Mandatory, Position = 0, ValueFromPipeline)] [string] $String,
        [Parameter(ParameterSetName = 'PlainText', Mandatory, Position = 1)] [switch] $AsPlainText,
        [Parameter(ParameterSetName = 'PlainText', Position = 2)] [switch] $Force
    )
    process {
        if ($PSCmdlet.ParameterSetName -ne 'PlainText') {
            $PSCmdlet.ThrowTerminatingError([System.Management.Automation.ErrorRecord]::new(
                    [System.NotSupportedException]::new('ConvertTo-SecureString stand-in: only -AsPlainText is supported (no DPAPI/key decryption here)'),
                    'ImportSecureString', 'NotImplemented', $null))
        }
        $secure = [securestring]::new()
        foreach ($c in $String.ToCharArray()) { $secure.AppendChar($c) }
        $secure.MakeReadOnly()
        $PSCmdlet.WriteObject($secure)
    }
}

function Import-PowerShellDataFile {
    # Real: parses the file and returns the single hashtable literal through Ast.SafeGetValue(), which
    # refuses anything but constants.
    [CmdletBinding(DefaultParameterSetName = 'ByPath')]
    param(
        [Parameter(ParameterSetName = 'ByPath', Mandatory, Position = 0)] [string[]] $Path,
        [Parameter(ParameterSetName = 'ByLiteralPath', Mandatory, ValueFromPipelineByPropertyName)] [Alias('PSPath', 'LP')] [string[]] $LiteralPath,
        [switch] $SkipLimitCheck
    )
    process {
        $literal = $PSCmdlet.ParameterSetName -eq 'ByLiteralPath'
        foreach ($file in (__StandInFilePaths $PSCmdlet $(if ($literal) { $LiteralPath } else { $Path }) $literal $false)) {
            $tokens = $null; $errors = $null
            $ast = [System.Management.Automation.Language.Parser]::ParseFile($file, [ref]$tokens, [ref]$errors)
            if ($errors.Count) {
                $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new(
                        [System.InvalidOperationException]::new("Cannot parse PowerShell data file $file"), 'CouldNotParseAsPowerShellDataFile', 'ParserError', $file))
                continue
            }
            $data = $ast.Find({ param($n) $n -is [System.Management.Automation.Language.HashtableAst] }, $false)
            if ($null -eq $data) {
                $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new(
                        [System.InvalidOperationException]::new("The file $file does not contain a PowerShell data hashtable"), 'CouldNotParseAsPowerShellDataFileNoHashtableRoot', 'ParserError', $file))
                continue
            }
            $PSCmdlet.WriteObject($data.SafeGetValue($SkipLimitCheck.IsPresent))
        }
    }
}

function Get-Process {
    # Real: System.Diagnostics.Process.GetProcesses() filtered by -Name (wildcards) or -Id.
    # Partial: -Module/-FileVersionInfo/-IncludeUserName/-InputObject are not supported.
    [CmdletBinding(DefaultParameterSetName = 'Name')]
    param(
        [Parameter(ParameterSetName = 'Name', Position = 0, ValueFromPipelineByPropertyName)] [Alias('ProcessName')] [string[]] $Name,
        [Parameter(ParameterSetName = 'Id', Mandatory, ValueFromPipelineByPropertyName)] [Alias('PID')] [int[]] $Id
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        if ($PSCmdlet.ParameterSetName -eq 'Id') {
            foreach ($one in $Id) {
                try { $PSCmdlet.WriteObject([System.Diagnostics.Process]::GetProcessById($one)) }
                catch [System.ArgumentException] {
                    $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new(
                            [System.Management.Automation.ItemNotFoundException]::new("Cannot find a process with the process identifier $one."),
                            'NoProcessFoundForGivenId', 'ObjectNotFound', $one))
                }
            }
            return
        }
        $all = [System.Diagnostics.Process]::GetProcesses() | Sort-Object -Property ProcessName, Id
        if (-not $Name) { foreach ($p in $all) { $PSCmdlet.WriteObject($p) }; return }
        foreach ($n in $Name) {
            $pattern = [System.Management.Automation.WildcardPattern]::new($n, 'IgnoreCase')
            $found = @($all | Where-Object { $pattern.IsMatch($_.ProcessName) })
            foreach ($p in $found) { $PSCmdlet.WriteObject($p) }
            if (-not $found -and -not [System.Management.Automation.WildcardPattern]::ContainsWildcardCharacters($n)) {
                $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new(
                        [System.Management.Automation.ItemNotFoundException]::new("Cannot find a process with the name `"$n`". Verify the process name and call the cmdlet again."),
                        'NoProcessFoundForGivenName', 'ObjectNotFound', $n))
            }
        }
    }
}

function Remove-Variable {
    # Real: removes the variables from the given scope, or the caller's nearest definition; through the
    # engine's session state (Stormatrix.PwshHost.StandInSupport). Partial: -Include/-Exclude are not
    # supported; called from a module, it sees the global session state's scopes, not the module's.
    [CmdletBinding(SupportsShouldProcess)]
    param(
        [Parameter(Mandatory, Position = 0, ValueFromPipelineByPropertyName)] [string[]] $Name,
        [string] $Scope,
        [switch] $Force
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        if (-not $PSCmdlet.ShouldProcess(($Name -join ', '), 'Remove Variable')) { return }
        $scopeId = if ($PSBoundParameters.ContainsKey('Scope')) { $Scope } else { $null }
        try {
            $missing = [Stormatrix.PwshHost.StandInSupport]::RemoveVariable($ExecutionContext.SessionState, $Name, $scopeId, $Force.IsPresent)
        } catch [System.Management.Automation.MethodInvocationException] {
            $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new($_.Exception.InnerException, 'VariableNotRemovable', 'WriteError', $Name))
            return
        }
        foreach ($m in $missing) {
            $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new(
                    [System.Management.Automation.ItemNotFoundException]::new("Cannot find a variable with the name '$m'."), 'VariableNotFound', 'ObjectNotFound', $m))
        }
    }
}
