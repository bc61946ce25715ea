# Bad sample for the 5.1 rule Parameter: Invoke-WebRequest -SkipHeaderValidation
Invoke-WebRequest -Uri $uri -SkipHeaderValidation
