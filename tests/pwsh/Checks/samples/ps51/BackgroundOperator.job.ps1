# Bad sample for the 5.1 rule BackgroundOperator: trailing & starts a job
Get-Process &
