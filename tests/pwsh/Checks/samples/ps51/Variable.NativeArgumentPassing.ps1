# Bad sample for the 5.1 rule Variable: $PSNativeCommandArgumentPassing
$PSNativeCommandArgumentPassing = "Standard"
