# Bad sample for the 5.1 rule Parameter: ForEach-Object -Parallel
1..4 | ForEach-Object -Parallel { $_ * 2 } -ThrottleLimit 2
