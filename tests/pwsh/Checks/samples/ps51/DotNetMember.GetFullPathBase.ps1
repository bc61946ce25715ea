# Bad sample for the 5.1 rule DotNetMember: [IO.Path]::GetFullPath(path, base)
$p = [IO.Path]::GetFullPath("x", $root)
