# Bad sample for the 5.1 rule Parameter: Join-Path -AdditionalChildPath
Join-Path -Path C:\ -ChildPath a -AdditionalChildPath b
