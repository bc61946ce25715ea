# Bad sample for the 5.1 rule DotNetType: .NET Core type as generic argument
$q = [System.Collections.Generic.List[System.Text.Rune]]::new()
