# What Windows PowerShell 5.1 (on .NET Framework 4.8) lacks, as data for Find-StormatrixPs51Problem.
# Each entry names the first version that has it and where that is documented, so a reader can check
# the claim; "docs: X" is the learn.microsoft.com reference page of X (its version notes or, for .NET,
# the "Applies to" table, which for these APIs lists no .NET Framework version). Read with the parser
# (SafeGetValue), not Import-PowerShellDataFile, so reading it runs nothing (the data is never executed).
# Deliberately not flagged: String.Contains(char) and String.Split(char[, options]) - .NET Core overloads,
# but on 5.1 PowerShell converts the [char] to [string] / [char[]] for the .NET Framework overloads with the
# same result; [string]::Join overloads likewise. Split with a multi-character string is flagged
# (StringSplitString): there the result differs.
@{
    # Syntax rules are AST walks in StormatrixChecks.psm1; this table is their documentation.
    Syntax          = @(
        @{ Rule = 'Ternary'; Since = 'PowerShell 7.0'; Source = 'docs: about_Operators, Ternary operator' }
        @{ Rule = 'NullCoalescing'; Since = 'PowerShell 7.0'; Source = 'docs: about_Operators, Null-coalescing operator ??' }
        @{ Rule = 'NullCoalescingAssignment'; Since = 'PowerShell 7.0'; Source = 'docs: about_Assignment_Operators, ??=' }
        @{ Rule = 'NullConditional'; Since = 'PowerShell 7.1'; Source = 'docs: about_Operators, Null-conditional operators ?. and ?[]' }
        @{ Rule = 'PipelineChain'; Since = 'PowerShell 7.0'; Source = 'docs: about_Pipeline_Chain_Operators' }
        @{ Rule = 'CleanBlock'; Since = 'PowerShell 7.3'; Source = 'docs: about_Functions_Advanced_Methods, clean' }
        @{ Rule = 'BackgroundOperator'; Since = 'PowerShell 6.0'; Source = 'docs: about_Operators, Background operator &' }
        @{ Rule = 'UnicodeEscape'; Since = 'PowerShell 6.0'; Source = 'docs: about_Special_Characters, Unicode character (`u{x})' }
        @{ Rule = 'NumberLiteral'; Since = 'PowerShell 6.2 (type suffixes), 7.0 (n, 0b)'; Source = 'docs: about_Numeric_Literals' }
        @{ Rule = 'EnumUnderlyingType'; Since = 'PowerShell 6.2'; Source = 'docs: about_Enum, Enumerations with an underlying type' }
        @{ Rule = 'NoRunspaceAffinity'; Since = 'PowerShell 7.4'; Source = 'docs: about_Classes, NoRunspaceAffinity attribute' }
        @{ Rule = 'JoinPathParts'; Since = 'PowerShell 6.0'; Source = 'docs: Join-Path, -AdditionalChildPath (binds a third positional part)' }
        @{ Rule = 'UnguardedPlatformVariable'; Since = 'PowerShell 6.0'; Source = 'docs: about_Automatic_Variables, $IsWindows/$IsLinux/$IsMacOS/$IsCoreCLR (undefined on 5.1: $null, and an error under Set-StrictMode)' }
        @{ Rule = 'StringSplitString'; Since = '.NET Core 2.0 String.Split(String)'; Source = 'docs: Differences between Windows PowerShell 5.1 and PowerShell 7.x; PowerShell/PowerShell#13726: on 5.1 "xy" is split on x and on y' }
        @{ Rule = 'StringComparisonOverload'; Since = '.NET Core 2.0/2.1'; Source = 'docs: String.Contains(String, StringComparison), String.Replace(String, String, StringComparison)' }
    )
    # Commands that do not exist in Windows PowerShell 5.1.
    Commands        = @(
        @{ Name = 'Get-Error'; Since = '7.0'; Source = 'docs: Get-Error' }
        @{ Name = 'Test-Json'; Since = '6.1'; Source = 'docs: Test-Json' }
        @{ Name = 'Join-String'; Since = '6.2'; Source = 'docs: Join-String' }
        @{ Name = 'Get-Uptime'; Since = '6.0'; Source = 'docs: Get-Uptime' }
        @{ Name = 'Remove-Alias'; Since = '6.0'; Source = 'docs: Remove-Alias' }
        @{ Name = 'Remove-Service'; Since = '6.0'; Source = 'docs: Remove-Service' }
        @{ Name = 'ConvertFrom-Markdown'; Since = '6.1'; Source = 'docs: ConvertFrom-Markdown' }
        @{ Name = 'Show-Markdown'; Since = '6.1'; Source = 'docs: Show-Markdown' }
        @{ Name = 'Get-SecureRandom'; Since = '7.4'; Source = 'docs: Get-SecureRandom' }
        @{ Name = 'ConvertTo-CliXml'; Since = '7.5'; Source = 'docs: ConvertTo-CliXml' }
        @{ Name = 'ConvertFrom-CliXml'; Since = '7.5'; Source = 'docs: ConvertFrom-CliXml' }
        @{ Name = 'Get-PSSubsystem'; Since = '7.1'; Source = 'docs: Get-PSSubsystem' }
    )
    # Parameters that 5.1's version of the command does not have.
    Parameters      = @(
        @{ Command = 'ForEach-Object'; Parameter = 'Parallel'; Since = '7.0'; Source = 'docs: ForEach-Object -Parallel' }
        @{ Command = 'ForEach-Object'; Parameter = 'ThrottleLimit'; Since = '7.0'; Source = 'docs: ForEach-Object -ThrottleLimit' }
        @{ Command = 'ForEach-Object'; Parameter = 'AsJob'; Since = '7.0'; Source = 'docs: ForEach-Object -AsJob' }
        @{ Command = 'Join-Path'; Parameter = 'AdditionalChildPath'; Since = '6.0'; Source = 'docs: Join-Path -AdditionalChildPath' }
        @{ Command = 'ConvertFrom-Json'; Parameter = 'AsHashtable'; Since = '6.0'; Source = 'docs: ConvertFrom-Json -AsHashtable' }
        @{ Command = 'ConvertFrom-Json'; Parameter = 'Depth'; Since = '6.2'; Source = 'docs: ConvertFrom-Json -Depth' }
        @{ Command = 'ConvertFrom-Json'; Parameter = 'NoEnumerate'; Since = '7.0'; Source = 'docs: ConvertFrom-Json -NoEnumerate' }
        @{ Command = 'ConvertFrom-Json'; Parameter = 'DateKind'; Since = '7.5'; Source = 'docs: ConvertFrom-Json -DateKind' }
        @{ Command = 'ConvertTo-Json'; Parameter = 'EscapeHandling'; Since = '6.2'; Source = 'docs: ConvertTo-Json -EscapeHandling' }
        @{ Command = 'ConvertTo-Json'; Parameter = 'EnumsAsStrings'; Since = '6.2'; Source = 'docs: ConvertTo-Json -EnumsAsStrings' }
        @{ Command = 'ConvertTo-Json'; Parameter = 'AsArray'; Since = '6.2'; Source = 'docs: ConvertTo-Json -AsArray' }
        @{ Command = 'Get-Content'; Parameter = 'AsByteStream'; Since = '6.0'; Source = 'docs: Get-Content -AsByteStream (5.1: -Encoding Byte)' }
        @{ Command = 'Set-Content'; Parameter = 'AsByteStream'; Since = '6.0'; Source = 'docs: Set-Content -AsByteStream' }
        @{ Command = 'Add-Content'; Parameter = 'AsByteStream'; Since = '6.0'; Source = 'docs: Add-Content -AsByteStream' }
        @{ Command = 'Invoke-WebRequest'; Parameter = 'SkipHeaderValidation'; Since = '6.0'; Source = 'docs: Invoke-WebRequest -SkipHeaderValidation' }
        @{ Command = 'Invoke-RestMethod'; Parameter = 'SkipHeaderValidation'; Since = '6.0'; Source = 'docs: Invoke-RestMethod -SkipHeaderValidation' }
        @{ Command = 'Invoke-WebRequest'; Parameter = 'SkipCertificateCheck'; Since = '6.0'; Source = 'docs: Invoke-WebRequest -SkipCertificateCheck' }
        @{ Command = 'Invoke-RestMethod'; Parameter = 'SkipCertificateCheck'; Since = '6.0'; Source = 'docs: Invoke-RestMethod -SkipCertificateCheck' }
        @{ Command = 'Split-Path'; Parameter = 'LeafBase'; Since = '6.0'; Source = 'docs: Split-Path -LeafBase' }
        @{ Command = 'Split-Path'; Parameter = 'Extension'; Since = '6.0'; Source = 'docs: Split-Path -Extension' }
        @{ Command = 'Sort-Object'; Parameter = 'Top'; Since = '6.0'; Source = 'docs: Sort-Object -Top' }
        @{ Command = 'Sort-Object'; Parameter = 'Bottom'; Since = '6.0'; Source = 'docs: Sort-Object -Bottom' }
        @{ Command = 'Sort-Object'; Parameter = 'Stable'; Since = '6.2'; Source = 'docs: Sort-Object -Stable' }
        @{ Command = 'Select-Object'; Parameter = 'SkipIndex'; Since = '6.0'; Source = 'docs: Select-Object -SkipIndex' }
        @{ Command = 'Select-String'; Parameter = 'Raw'; Since = '7.0'; Source = 'docs: Select-String -Raw' }
        @{ Command = 'Get-ChildItem'; Parameter = 'FollowSymlink'; Since = '6.0'; Source = 'docs: Get-ChildItem -FollowSymlink' }
        @{ Command = 'Measure-Object'; Parameter = 'AllStats'; Since = '6.0'; Source = 'docs: Measure-Object -AllStats' }
        @{ Command = 'Start-Process'; Parameter = 'Environment'; Since = '7.4'; Source = 'docs: Start-Process -Environment' }
        @{ Command = 'Get-Random'; Parameter = 'Shuffle'; Since = '7.3'; Source = 'docs: Get-Random -Shuffle' }
    )
    # Parameter values 5.1's ValidateSet refuses.
    ParameterValues = @(
        @{ Command = '*'; Parameter = 'Encoding'; Values = @('utf8NoBOM', 'utf8BOM'); Since = '6.0'; Source = 'docs: about_Character_Encoding (5.1: UTF8 writes a BOM, no utf8NoBOM)' }
        @{ Command = '*'; Parameter = 'Encoding'; Values = @('ansi'); Since = '7.4'; Source = 'docs: about_Character_Encoding, ansi' }
        @{ Command = '*'; Parameter = 'ErrorAction'; Values = @('Break'); Since = '7.0'; Source = 'docs: about_CommonParameters, -ErrorAction Break' }
    )
    # Automatic and preference variables 5.1 does not have (reading them gives $null; setting them does nothing).
    Variables       = @(
        @{ Name = 'PSStyle'; Since = '7.2'; Source = 'docs: about_ANSI_Terminals, $PSStyle' }
        @{ Name = 'PSNativeCommandArgumentPassing'; Since = '7.3'; Source = 'docs: about_Preference_Variables (5.1 always passes native arguments the Legacy way)' }
        @{ Name = 'PSNativeCommandUseErrorActionPreference'; Since = '7.3'; Source = 'docs: about_Preference_Variables' }
        @{ Name = 'EnabledExperimentalFeatures'; Since = '6.2'; Source = 'docs: about_Automatic_Variables' }
    )
    PlatformVariables = @('IsWindows', 'IsLinux', 'IsMacOS', 'IsCoreCLR')
    # .NET types .NET Framework 4.8 does not have (a trailing .* matches a namespace).
    Types           = @(
        @{ Type = 'System.Text.Json.*'; Since = '.NET Core 3.0'; Source = 'docs: System.Text.Json namespace' }
        @{ Type = 'System.HashCode'; Since = '.NET Core 2.1'; Source = 'docs: HashCode struct' }
        @{ Type = 'System.Range'; Since = '.NET Core 3.0'; Source = 'docs: Range struct' }
        @{ Type = 'System.Index'; Since = '.NET Core 3.0'; Source = 'docs: Index struct' }
        @{ Type = 'System.Text.Rune'; Since = '.NET Core 3.0'; Source = 'docs: Rune struct' }
        @{ Type = 'System.Half'; Since = '.NET 5'; Source = 'docs: Half struct' }
        @{ Type = 'System.DateOnly'; Since = '.NET 6'; Source = 'docs: DateOnly struct' }
        @{ Type = 'System.TimeOnly'; Since = '.NET 6'; Source = 'docs: TimeOnly struct' }
        @{ Type = 'System.MathF'; Since = '.NET Core 2.0'; Source = 'docs: MathF class' }
        @{ Type = 'System.Collections.Generic.PriorityQueue*'; Since = '.NET 6'; Source = 'docs: PriorityQueue class' }
        @{ Type = 'System.Net.IPNetwork'; Since = '.NET 8'; Source = 'docs: IPNetwork struct (System.Net)' }
        @{ Type = 'System.TimeProvider'; Since = '.NET 8'; Source = 'docs: TimeProvider class' }
        @{ Type = 'System.Threading.Channels.*'; Since = '.NET Core 3.0'; Source = 'docs: System.Threading.Channels namespace' }
        @{ Type = 'System.Net.Http.SocketsHttpHandler'; Since = '.NET Core 2.1'; Source = 'docs: SocketsHttpHandler class' }
    )
    # Static members .NET Framework 4.8 lacks on types it has.
    StaticMembers   = @(
        @{ Type = 'System.IO.Path'; Member = 'Join'; Since = '.NET Core 2.1'; Source = 'docs: Path.Join' }
        @{ Type = 'System.IO.Path'; Member = 'GetRelativePath'; Since = '.NET Core 2.0'; Source = 'docs: Path.GetRelativePath' }
        @{ Type = 'System.IO.Path'; Member = 'IsPathFullyQualified'; Since = '.NET Core 2.1'; Source = 'docs: Path.IsPathFullyQualified' }
        @{ Type = 'System.IO.Path'; Member = 'TrimEndingDirectorySeparator'; Since = '.NET Core 3.0'; Source = 'docs: Path.TrimEndingDirectorySeparator' }
        @{ Type = 'System.IO.Path'; Member = 'EndsInDirectorySeparator'; Since = '.NET Core 3.0'; Source = 'docs: Path.EndsInDirectorySeparator' }
        @{ Type = 'System.IO.File'; Member = '*Async'; Since = '.NET Core 2.0'; Source = 'docs: File.ReadAllTextAsync and the other File.*Async methods' }
        @{ Type = 'System.IO.Directory'; Member = 'CreateTempSubdirectory'; Since = '.NET 7'; Source = 'docs: Directory.CreateTempSubdirectory' }
        @{ Type = 'System.Convert'; Member = 'ToHexString'; Since = '.NET 5'; Source = 'docs: Convert.ToHexString' }
        @{ Type = 'System.Convert'; Member = 'FromHexString'; Since = '.NET 5'; Source = 'docs: Convert.FromHexString' }
        @{ Type = 'System.Environment'; Member = 'ProcessId'; Since = '.NET 5'; Source = 'docs: Environment.ProcessId' }
        @{ Type = 'System.Environment'; Member = 'ProcessPath'; Since = '.NET 6'; Source = 'docs: Environment.ProcessPath' }
        @{ Type = 'System.Math'; Member = 'Clamp'; Since = '.NET Core 2.0'; Source = 'docs: Math.Clamp' }
        @{ Type = 'System.Random'; Member = 'Shared'; Since = '.NET 6'; Source = 'docs: Random.Shared' }
        @{ Type = 'System.Text.Encoding'; Member = 'Latin1'; Since = '.NET 5'; Source = 'docs: Encoding.Latin1' }
        @{ Type = 'System.Security.Cryptography.RandomNumberGenerator'; Member = 'GetInt32'; Since = '.NET Core 3.0'; Source = 'docs: RandomNumberGenerator.GetInt32' }
        @{ Type = 'System.Security.Cryptography.SHA256'; Member = 'HashData'; Since = '.NET 5'; Source = 'docs: SHA256.HashData' }
        @{ Type = 'System.Collections.Generic.KeyValuePair'; Member = 'Create'; Since = '.NET Core 2.0'; Source = 'docs: KeyValuePair.Create' }
        @{ Type = 'System.ArgumentNullException'; Member = 'ThrowIfNull'; Since = '.NET 6'; Source = 'docs: ArgumentNullException.ThrowIfNull' }
        @{ Type = 'System.OperatingSystem'; Member = 'Is*'; Since = '.NET 5'; Source = 'docs: OperatingSystem.IsWindows and the other Is* platform checks' }
        @{ Type = 'System.IO.Path'; Member = 'GetFullPath'; MinArguments = 2; Since = '.NET Core 2.1'; Source = 'docs: Path.GetFullPath(String, String)' }
        @{ Type = 'System.Linq.Enumerable'; Member = 'Chunk'; Since = '.NET 6'; Source = 'docs: Enumerable.Chunk' }
    )
}
