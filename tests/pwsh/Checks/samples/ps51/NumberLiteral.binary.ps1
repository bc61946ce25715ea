# Bad sample for the 5.1 rule NumberLiteral: 0b literal
$mask = 0b1010
