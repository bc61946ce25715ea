// Validates .xlsx files with Microsoft's Open XML SDK (OpenXmlValidator, Office 2016 file format rules).
// Usage: OpenXmlCheck FILE.xlsx [FILE.xlsx ...]
// Prints one line per error: "<file>\t<part>\t<xpath>\t<error id>\t<description>", then a summary line
// "openxml-check: N file(s), M error(s)". Exit 0 when no file has an error, 1 when any has, 2 when a file
// cannot be opened as a spreadsheet package at all (its name and the reason printed).
using DocumentFormat.OpenXml;
using DocumentFormat.OpenXml.Packaging;
using DocumentFormat.OpenXml.Validation;

if (args.Length == 0)
{
    Console.Error.WriteLine("usage: OpenXmlCheck FILE.xlsx [FILE.xlsx ...]");
    return 2;
}
var validator = new OpenXmlValidator(FileFormatVersions.Office2016);
int errors = 0, unreadable = 0;
foreach (var file in args)
{
    try
    {
        using var doc = SpreadsheetDocument.Open(file, false);
        foreach (var e in validator.Validate(doc))
        {
            errors++;
            var part = e.Part?.Uri?.ToString() ?? "?";
            var path = e.Path?.XPath ?? "?";
            var text = (e.Description ?? "").Replace('\n', ' ').Replace('\r', ' ');
            Console.WriteLine($"{file}\t{part}\t{path}\t{e.Id}\t{text}");
        }
    }
    catch (Exception ex)
    {
        unreadable++;
        Console.WriteLine($"{file}\t-\t-\tunreadable\t{ex.GetType().Name}: {ex.Message}");
    }
}
Console.WriteLine($"openxml-check: {args.Length} file(s), {errors} error(s), {unreadable} unreadable");
return unreadable > 0 ? 2 : (errors > 0 ? 1 : 0);
