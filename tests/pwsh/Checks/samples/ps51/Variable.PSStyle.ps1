# Bad sample for the 5.1 rule Variable: $PSStyle
$PSStyle.OutputRendering = "PlainText"
