# Bad sample for the 5.1 rule DotNetType: [System.HashCode]
$h = [HashCode]::Combine($a, $b)
