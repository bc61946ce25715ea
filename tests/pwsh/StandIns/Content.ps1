# Stand-ins for the content cmdlets (Microsoft.PowerShell.Management). The real ones go through the
# FileSystem provider's content reader/writer; these resolve the path through the provider and read or
# write the file with the same .NET encodings (pwsh 7 default: UTF-8 without BOM, BOM detected on read).

function __StandInEncoding {
    # pwsh's ArgumentToEncodingTransformation: names, code pages or Encoding objects.
    param($Value)
    if ($null -eq $Value) { return [System.Text.UTF8Encoding]::new($false) }
    if ($Value -is [System.Text.Encoding]) { return $Value }
    if ($Value -is [int]) { return [System.Text.Encoding]::GetEncoding($Value) }
    switch ([string]$Value) {
        'ascii' { return [System.Text.ASCIIEncoding]::new() }
        'bigendianunicode' { return [System.Text.UnicodeEncoding]::new($true, $true) }
        'bigendianutf32' { return [System.Text.UTF32Encoding]::new($true, $true) }
        'unicode' { return [System.Text.UnicodeEncoding]::new($false, $true) }
        'utf32' { return [System.Text.UTF32Encoding]::new($false, $true) }
        'utf7' { return [System.Text.Encoding]::GetEncoding('utf-7') }
        'utf8' { return [System.Text.UTF8Encoding]::new($false) }
        'utf8BOM' { return [System.Text.UTF8Encoding]::new($true) }
        'utf8NoBOM' { return [System.Text.UTF8Encoding]::new($false) }
        'default' { return [System.Text.UTF8Encoding]::new($false) }
        'oem' { return [System.Text.UTF8Encoding]::new($false) }
        'ansi' { return [System.Text.UTF8Encoding]::new($false) }
        default { return [System.Text.Encoding]::GetEncoding([string]$Value) }
    }
}

function __StandInFilePaths {
    # Provider paths for -Path (wildcards, must exist) or -LiteralPath; $Create allows a new file.
    param([System.Management.Automation.PSCmdlet] $Cmdlet, [string[]] $Paths, [bool] $Literal, [bool] $Create)
    foreach ($one in $Paths) {
        try {
            if (-not $Create -and -not $ExecutionContext.SessionState.InvokeProvider.Item.Exists($one, $false, $Literal)) {
                # written, not thrown: a caught throw would still land in the caller's -ErrorVariable
                $missing = [System.Management.Automation.ItemNotFoundException]::new("Cannot find path '$($ExecutionContext.SessionState.Path.GetUnresolvedProviderPathFromPSPath($one))' because it does not exist.")
                $Cmdlet.WriteError([System.Management.Automation.ErrorRecord]::new($missing, 'PathNotFound', 'ObjectNotFound', $one))
                continue
            }
            if ($Literal -or ($Create -and -not [System.Management.Automation.WildcardPattern]::ContainsWildcardCharacters($one))) {
                $ExecutionContext.SessionState.Path.GetUnresolvedProviderPathFromPSPath($one)
            } else {
                $provider = $null
                $ExecutionContext.SessionState.Path.GetResolvedProviderPathFromPSPath($one, [ref]$provider)
            }
        } catch [System.Management.Automation.SessionStateException], [System.Management.Automation.ProviderInvocationException] {
            $Cmdlet.WriteError($_)
        }
    }
}

function Get-Content {
    # Real: the FileSystem provider's content reader. Lines split at \r\n, \n or \r; -Raw gives one
    # string (nothing for an empty file). Partial: no PSPath/ReadCount note properties on the lines;
    # -Delimiter, -Wait, -Stream and -ReadCount batching are not supported.
    [CmdletBinding(DefaultParameterSetName = 'Path')]
    param(
        [Parameter(ParameterSetName = 'Path', Mandatory, Position = 0, ValueFromPipelineByPropertyName)] [string[]] $Path,
        [Parameter(ParameterSetName = 'LiteralPath', Mandatory, ValueFromPipelineByPropertyName)] [Alias('PSPath', 'LP')] [string[]] $LiteralPath,
        [Alias('First', 'Head')] [long] $TotalCount = -1,
        [Alias('Last')] [int] $Tail = -1,
        [switch] $Raw,
        [object] $Encoding,
        [switch] $AsByteStream,
        [long] $ReadCount = 1,
        [switch] $Force
    )
    begin { foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) } }
    process {
        $literal = $PSCmdlet.ParameterSetName -eq 'LiteralPath'
        foreach ($file in (__StandInFilePaths $PSCmdlet $(if ($literal) { $LiteralPath } else { $Path }) $literal $false)) {
            if ([System.IO.Directory]::Exists($file)) {
                $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new(
                        [System.UnauthorizedAccessException]::new("Unable to get content because it is a directory: '$file'. Please use 'Get-ChildItem' instead."),
                        'GetContentReaderUnauthorizedAccessError', 'PermissionDenied', $file))
                continue
            }
            try {
                if ($AsByteStream) {
                    $bytes = [System.IO.File]::ReadAllBytes($file)
                    if ($Raw) { $PSCmdlet.WriteObject($bytes, $false) } else { $PSCmdlet.WriteObject($bytes, $true) }
                    continue
                }
                $enc = __StandInEncoding $Encoding
                $reader = [System.IO.StreamReader]::new($file, $enc, $true)
                try {
                    if ($Raw) {
                        $text = $reader.ReadToEnd()
                        if ($text.Length -gt 0) { $PSCmdlet.WriteObject($text) }
                        continue
                    }
                    $lines = [System.Collections.Generic.List[string]]::new()
                    while ($null -ne ($line = $reader.ReadLine())) {
                        $lines.Add($line)
                        if ($TotalCount -ge 0 -and $lines.Count -ge $TotalCount) { break }
                    }
                } finally { $reader.Dispose() }
                $start = if ($Tail -ge 0) { [Math]::Max(0, $lines.Count - $Tail) } else { 0 }
                for ($i = $start; $i -lt $lines.Count; $i++) { $PSCmdlet.WriteObject($lines[$i]) }
            } catch [System.IO.IOException], [System.UnauthorizedAccessException] {
                $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new($_.Exception, 'GetContentReaderIOError', 'ReadError', $file))
            }
        }
    }
}

function __StandInWriteContent {
    param([System.Management.Automation.PSCmdlet] $Cmdlet, [string[]] $Paths, [bool] $Literal, [System.Collections.Generic.List[object]] $Values,
        [object] $Encoding, [bool] $NoNewline, [bool] $Append, [bool] $AsByteStream)
    foreach ($file in (__StandInFilePaths $Cmdlet $Paths $Literal $true)) {
        try {
            if ($AsByteStream) {
                $bytes = [byte[]]@($Values | ForEach-Object { $_ })
                $mode = if ($Append) { [System.IO.FileMode]::Append } else { [System.IO.FileMode]::Create }
                $fs = [System.IO.FileStream]::new($file, $mode)
                try { $fs.Write($bytes, 0, $bytes.Length) } finally { $fs.Dispose() }
                continue
            }
            $enc = __StandInEncoding $Encoding
            $sb = [System.Text.StringBuilder]::new()
            foreach ($v in $Values) {
                foreach ($e in @(if ($v -is [object[]]) { $v } else { , $v })) {
                    $null = $sb.Append([string]$e)
                    if (-not $NoNewline) { $null = $sb.Append([Environment]::NewLine) }
                }
            }
            if ($Append) { [System.IO.File]::AppendAllText($file, $sb.ToString(), $enc) }
            else { [System.IO.File]::WriteAllText($file, $sb.ToString(), $enc) }
        } catch [System.IO.IOException], [System.UnauthorizedAccessException] {
            $Cmdlet.WriteError([System.Management.Automation.ErrorRecord]::new($_.Exception, 'SetContentWriterIOError', 'WriteError', $file))
        }
    }
}

function Set-Content {
    # Real: the FileSystem provider's content writer: each value's string form and a newline
    # ([Environment]::NewLine), UTF-8 without BOM by default; values from the pipeline are written
    # together at the end. Partial: -Stream, -Filter/-Include/-Exclude are not supported.
    [CmdletBinding(DefaultParameterSetName = 'Path', SupportsShouldProcess)]
    param(
        [Parameter(ParameterSetName = 'Path', Mandatory, Position = 0, ValueFromPipelineByPropertyName)] [string[]] $Path,
        [Parameter(ParameterSetName = 'LiteralPath', Mandatory, ValueFromPipelineByPropertyName)] [Alias('PSPath', 'LP')] [string[]] $LiteralPath,
        [Parameter(Mandatory, Position = 1, ValueFromPipeline, ValueFromPipelineByPropertyName)] [AllowNull()] [AllowEmptyCollection()] [object[]] $Value,
        [object] $Encoding,
        [switch] $NoNewline,
        [switch] $AsByteStream,
        [switch] $PassThru,
        [switch] $Force
    )
    begin {
        foreach ($p in (__StandInCallerPreference $PSBoundParameters)) { $ExecutionContext.SessionState.PSVariable.Set($p) }
        $values = [System.Collections.Generic.List[object]]::new()
    }
    process { foreach ($v in $Value) { $values.Add($v) } }
    end {
        $literal = $PSCmdlet.ParameterSetName -eq 'LiteralPath'
        $paths = if ($literal) { $LiteralPath } else { $Path }
        if (-not $PSCmdlet.ShouldProcess(($paths -join ', '), 'Set Content')) { return }
        __StandInWriteContent $PSCmdlet $paths $literal $values $Encoding $NoNewline.IsPresent $false $AsByteStream.IsPresent
        if ($PassThru) { foreach ($v in $values) { $PSCmdlet.WriteObject($v) } }
    }
}
