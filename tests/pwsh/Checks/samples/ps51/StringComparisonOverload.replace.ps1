# Bad sample for the 5.1 rule StringComparisonOverload: String.Replace(string, string, StringComparison)
$n = $name.Replace("a", "b", [StringComparison]::Ordinal)
