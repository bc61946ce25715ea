# Bad sample for the 5.1 rule NullCoalescingAssignment: ??=
$cache ??= @{}
