# Bad sample for the 5.1 rule Parameter: ConvertFrom-Json -Depth
$o = ConvertFrom-Json -InputObject $text -Depth 20
