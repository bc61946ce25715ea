# Bad sample for the 5.1 rule DotNetMember: [System.IO.Path]::Join
$p = [System.IO.Path]::Join($root, "stormatrix")
