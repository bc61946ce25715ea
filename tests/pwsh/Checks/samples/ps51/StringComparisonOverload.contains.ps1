# Bad sample for the 5.1 rule StringComparisonOverload: String.Contains(string, StringComparison)
if ($name.Contains("disk", [StringComparison]::OrdinalIgnoreCase)) { "yes" }
