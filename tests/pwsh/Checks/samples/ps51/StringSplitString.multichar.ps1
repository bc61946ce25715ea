# Bad sample for the 5.1 rule StringSplitString: String.Split(string)
$parts = $line.Split("::")
