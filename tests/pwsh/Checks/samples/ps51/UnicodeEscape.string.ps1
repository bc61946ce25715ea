# Bad sample for the 5.1 rule UnicodeEscape: `u{...}
$check = "done `u{2713}"
