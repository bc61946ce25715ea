# Bad sample for the 5.1 rule DotNetMember: [IO.File]::ReadAllTextAsync
$t = [IO.File]::ReadAllTextAsync($file).Result
