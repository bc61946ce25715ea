# Bad sample for the 5.1 rule JoinPathParts: 3-argument Join-Path
$p = Join-Path $env:TEMP "stormatrix" "payload.b64"
