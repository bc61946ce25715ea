# Bad sample for the 5.1 rule Parameter: a parameter 5.1 lacks, on an alias of the command
$bytes = gc $file -AsByteStream
