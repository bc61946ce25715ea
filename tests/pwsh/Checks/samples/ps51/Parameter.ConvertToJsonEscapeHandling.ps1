# Bad sample for the 5.1 rule Parameter: ConvertTo-Json -EscapeHandling
$json = ConvertTo-Json -InputObject $o -EscapeHandling EscapeNonAscii
