# Bad sample for the 5.1 rule ParameterValue: -ErrorAction Break
Get-Item -Path $file -ErrorAction Break
