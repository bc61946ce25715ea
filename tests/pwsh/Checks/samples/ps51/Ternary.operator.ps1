# Bad sample for the 5.1 rule Ternary: a ? b : c
$size = $big ? 4096 : 512
