# Bad sample for the 5.1 rule NumberLiteral: type suffix
$small = 100uy
