# ConvertTo-Json / ConvertFrom-Json stand-ins (Microsoft.PowerShell.Utility). The real cmdlets are a thin
# layer over Newtonsoft.Json (JsonObject.cs); Stormatrix.PwshHost.StandInJson (tests/pwsh/host) ports that
# layer and uses the same Newtonsoft, so text and types (Int64 numbers, [datetime] for ISO-8601 strings,
# ordered PSCustomObject properties, the -Depth truncation) come out as in pwsh 7.6.

function ConvertFrom-Json {
    # Real: pipeline strings are buffered; one string is one JSON text; several are tried one by one,
    # and when the first is not a complete text, all are joined with newlines. Arrays are enumerated
    # unless -NoEnumerate.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory, Position = 0, ValueFromPipeline)] [AllowEmptyString()] [string] $InputObject,
        [switch] $AsHashtable,
        [ValidateRange(1, [int]::MaxValue)] [int] $Depth = 1024,
        [switch] $NoEnumerate,
        [ValidateSet('Default', 'Local', 'Utc', 'Offset', 'String')] [string] $DateKind = 'Default'
    )
    begin {
        foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) }
        $buffer = [System.Collections.Generic.List[string]]::new()
        $convert = {
            param([string] $text)
            try {
                $result = [Stormatrix.PwshHost.StandInJson]::ConvertFrom($text, $AsHashtable.IsPresent, $Depth, $DateKind)
            } catch [System.Management.Automation.MethodInvocationException] {
                $inner = $_.Exception.InnerException
                if ($inner -is [System.ArgumentException]) { throw $inner }
                $PSCmdlet.ThrowTerminatingError([System.Management.Automation.ErrorRecord]::new($inner, 'System.InvalidOperationException', 'InvalidOperation', $text))
            }
            $PSCmdlet.WriteObject($result, -not $NoEnumerate)
        }
    }
    process { $buffer.Add($InputObject) }
    end {
        if ($buffer.Count -eq 0) { return }
        try {
            if ($buffer.Count -eq 1) { & $convert $buffer[0]; return }
            $first = $false
            try { & $convert $buffer[0]; $first = $true } catch [System.ArgumentException] { }
            if ($first) { for ($i = 1; $i -lt $buffer.Count; $i++) { & $convert $buffer[$i] } }
            else { & $convert ($buffer -join [Environment]::NewLine) }
        } catch [System.ArgumentException] {
            $PSCmdlet.ThrowTerminatingError([System.Management.Automation.ErrorRecord]::new($_.Exception, 'System.ArgumentException', 'NotSpecified', $null))
        }
    }
}

function ConvertTo-Json {
    # Real: buffers the input; one object is converted as itself, several (or -AsArray) as an array.
    # -Depth (default 2, at most 100) counts levels below the top object; deeper values become their
    # string form, with one warning.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory, Position = 0, ValueFromPipeline)] [AllowNull()] [object] $InputObject,
        [ValidateRange(0, 100)] [int] $Depth = 2,
        [switch] $Compress,
        [switch] $EnumsAsStrings,
        [switch] $AsArray,
        [ValidateSet('Default', 'EscapeNonAscii', 'EscapeHtml')] [string] $EscapeHandling = 'Default'
    )
    begin {
        foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) }
        $objects = [System.Collections.Generic.List[object]]::new()
    }
    process { $objects.Add($InputObject) }
    end {
        if ($objects.Count -eq 0) { return }
        if ($objects.Count -gt 1 -or $AsArray) { $target = $objects.ToArray() } else { $target = $objects[0] }
        $truncated = $false
        try {
            $json = [Stormatrix.PwshHost.StandInJson]::ConvertTo($target, $Depth, $Compress.IsPresent, $EnumsAsStrings.IsPresent, $EscapeHandling, [ref]$truncated)
        } catch [System.Management.Automation.MethodInvocationException] {
            $PSCmdlet.ThrowTerminatingError([System.Management.Automation.ErrorRecord]::new($_.Exception.InnerException, 'JsonStringConversionFailed', 'InvalidOperation', $target))
        }
        if ($truncated) { $PSCmdlet.WriteWarning("Resulting JSON is truncated as serialization has exceeded the set depth of $Depth.") }
        $PSCmdlet.WriteObject($json)
    }
}
