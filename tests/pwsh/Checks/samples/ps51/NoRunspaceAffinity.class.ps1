# Bad sample for the 5.1 rule NoRunspaceAffinity: NoRunspaceAffinity attribute
[NoRunspaceAffinity()] class Worker { [int]$Count }
