# Bad sample for the 5.1 rule Command: Test-Json
if (Test-Json -Json $text) { "valid" }
