# Bad sample for the 5.1 rule CleanBlock: clean {} block
function Test-Clean { process { $_ } clean { Remove-Variable -Name x } }
