# Bad sample for the 5.1 rule PipelineChain: &&
Get-Item -Path $env:TEMP && Write-Output "ok"
