# Bad sample for the 5.1 rule Parameter: Get-Content -AsByteStream
$bytes = Get-Content -Path $file -AsByteStream -Raw
