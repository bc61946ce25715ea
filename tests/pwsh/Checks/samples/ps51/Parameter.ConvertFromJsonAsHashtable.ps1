# Bad sample for the 5.1 rule Parameter: ConvertFrom-Json -AsHashtable
$h = $text | ConvertFrom-Json -AsHashtable
