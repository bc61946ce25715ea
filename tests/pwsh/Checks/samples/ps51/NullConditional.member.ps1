# Bad sample for the 5.1 rule NullConditional: ?.
$serial = ${disk}?.SerialNumber
