# Bad sample for the 5.1 rule NullCoalescing: ??
$name = $given ?? "default"
