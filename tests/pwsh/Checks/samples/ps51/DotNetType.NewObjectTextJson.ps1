# Bad sample for the 5.1 rule DotNetType: New-Object of a .NET Core type
$options = New-Object System.Text.Json.JsonSerializerOptions
