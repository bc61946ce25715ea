# Bad sample for the 5.1 rule UnguardedPlatformVariable: $IsWindows without a version guard
if ($IsWindows) { $root = $env:SystemDrive }
