# Bad sample for the 5.1 rule NullConditional: ?[]
$first = ${list}?[0]
