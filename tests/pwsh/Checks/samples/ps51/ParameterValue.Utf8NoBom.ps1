# Bad sample for the 5.1 rule ParameterValue: -Encoding utf8NoBOM
Set-Content -Path $file -Value $text -Encoding utf8NoBOM
