# Bad sample for the 5.1 rule Command: Get-Error
try { Get-Item -Path nothing } catch { Get-Error }
