# Bad sample for the 5.1 rule DotNetType: [System.Text.Json...]
$doc = [System.Text.Json.JsonDocument]::Parse($text)
