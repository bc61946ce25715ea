// A console host for the real PowerShell 7.6 engine (System.Management.Automation 7.6.9 from NuGet).
//
// Why: pwsh itself and the Microsoft.PowerShell.Utility/Management modules are not obtainable on the
// development machines, the engine is. This program takes the part of pwsh's command line that the
// project uses (the vmware backend's `pwsh -NoLogo -NoProfile -NonInteractive -File script args`, the
// WinRM executor's `powershell -NoProfile -NonInteractive -EncodedCommand <base64 UTF-16LE>`, and
// `-Command`), runs it in one runspace, writes the success stream through Out-Default (so output is
// formatted and streamed as pwsh does), errors to stderr, and exits with pwsh's exit codes:
// `exit N` -> N; a terminating error -> 1; otherwise 0.
//
// Before the user's code runs, the host dot-sources tests/pwsh/StandIns/StandIns.ps1 (path from
// STORMATRIX_PWSH_STANDINS, else ../../StandIns/StandIns.ps1 next to the build output), which defines
// stand-ins only for cmdlets that Get-Command does not find. STORMATRIX_PWSH_STANDINS=none skips them.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Management.Automation;
using System.Management.Automation.Host;
using System.Management.Automation.Runspaces;
using System.Text;

namespace Stormatrix.PwshHost
{
    internal static class Program
    {
        private static int Main(string[] args)
        {
            Console.OutputEncoding = new UTF8Encoding(false);
            Options opt;
            try { opt = Options.Parse(args); }
            catch (ArgumentException e)
            {
                Console.Error.WriteLine($"StormatrixPwshHost: {e.Message}");
                Console.Error.WriteLine(Options.Usage);
                return 64;
            }
            if (opt.ShowVersion)
            {
                Console.WriteLine($"PowerShell {ConsoleHost.PSVersion}");
                return 0;
            }

            var host = new ConsoleHost();
            var iss = InitialSessionState.CreateDefault2();
            using var runspace = RunspaceFactory.CreateRunspace(host, iss);
            runspace.Open();
            Runspace.DefaultRunspace = runspace;

            // output redirected to a pipe or file: plain text, as pwsh renders it then
            Invoke(runspace, host, "$PSStyle.OutputRendering = 'PlainText'; $global:LASTEXITCODE = $null", null, writeOutput: false);

            string standIns = StandInsPath();
            if (standIns != null && !Invoke(runspace, host, $". {Quote(standIns)}", null, writeOutput: false))
            {
                Console.Error.WriteLine($"StormatrixPwshHost: loading the cmdlet stand-ins ({standIns}) failed");
                return 70;
            }

            bool isFile = opt.File != null;
            if (isFile && !File.Exists(Path.GetFullPath(opt.File)))
            {
                // pwsh: exit code 64 and this message when the -File script does not exist
                Console.Error.WriteLine($"The argument '{opt.File}' is not recognized as the name of a script file. Check the spelling of the name, or if a path was included, verify that the path is correct and try again.");
                return 64;
            }
            if (isFile) RethrowExit(runspace);
            bool ok = isFile
                ? Invoke(runspace, host, null, opt.FileCommand(), writeOutput: true)
                : Invoke(runspace, host, opt.ScriptText(), null, writeOutput: true);
            if (host.ExitCode.HasValue) return host.ExitCode.Value;
            if (!ok) return 1;
            if (isFile)
            {
                // -File: `exit N` ends the process with N (see RethrowExit); normal termination is 0,
                // whatever the last native command returned (about_Pwsh)
                return 0;
            }
            // -Command/-EncodedCommand: 1 when the last statement failed ($?), as pwsh does
            object status = runspace.SessionStateProxy.GetVariable(LastStatusVariable);
            return status is bool b && !b ? 1 : 0;
        }

        private static string StandInsPath()
        {
            string env = Environment.GetEnvironmentVariable("STORMATRIX_PWSH_STANDINS");
            if (string.Equals(env, "none", StringComparison.OrdinalIgnoreCase)) return null;
            if (!string.IsNullOrEmpty(env)) return env;
            string here = AppContext.BaseDirectory;
            // build output: <repo>/.tools/pwsh-host/ ; the stand-ins: <repo>/tests/pwsh/StandIns/
            foreach (string rel in new[] { "../../tests/pwsh/StandIns/StandIns.ps1", "../StandIns/StandIns.ps1" })
            {
                string p = Path.GetFullPath(Path.Combine(here, rel));
                if (File.Exists(p)) return p;
            }
            return null;
        }

        /// <summary>As pwsh does for -File: `exit N` in the script (or a function it calls) ends the whole
        /// run with N instead of only the script (ExecutionContext.ScriptCommandProcessorShouldRethrowExit,
        /// internal to the engine; set by reflection on the pinned 7.6.9).</summary>
        private static void RethrowExit(Runspace runspace)
        {
            const System.Reflection.BindingFlags flags = System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Public;
            object context = runspace.GetType().GetProperty("ExecutionContext", flags)?.GetValue(runspace);
            var prop = context?.GetType().GetProperty("ScriptCommandProcessorShouldRethrowExit", flags);
            if (prop == null) throw new InvalidOperationException("this engine version has no ScriptCommandProcessorShouldRethrowExit: the host needs updating");
            prop.SetValue(context, true);
        }

        internal const string LastStatusVariable = "__StormatrixHostLastStatus";

        internal static string Quote(string s) => "'" + s.Replace("'", "''") + "'";

        /// <summary>Runs one script; false when it ended in a terminating error.</summary>
        private static bool Invoke(Runspace runspace, ConsoleHost host, string script, Command command, bool writeOutput)
        {
            using var ps = PowerShell.Create();
            ps.Runspace = runspace;
            if (command != null) ps.Commands.AddCommand(command);
            else ps.AddScript(script, useLocalScope: false);
            if (writeOutput) ps.AddCommand("Out-Default");
            else ps.AddCommand("Out-Null");
            ps.Commands.Commands[0].MergeMyResults(PipelineResultTypes.Error, PipelineResultTypes.Output);
            try
            {
                ps.Invoke();
                return true;   // non-terminating errors were written by Out-Default; pwsh -File exits 0 after them
            }
            catch (ExitException e)
            {
                host.ExitCode = ExitCodeOf(e.Argument);
                return true;
            }
            catch (RuntimeException e)
            {
                if (host.ExitCode.HasValue) return true;
                if (e.InnerException is ExitException inner)
                {
                    host.ExitCode = ExitCodeOf(inner.Argument);
                    return true;
                }
                WriteError(e.ErrorRecord);
                return false;
            }
        }

        private static int ExitCodeOf(object argument)
        {
            if (argument == null) return 0;
            try { return LanguagePrimitives.ConvertTo<int>(argument); }
            catch (PSInvalidCastException) { return 0; }
        }

        internal static void WriteError(ErrorRecord er)
        {
            var sb = new StringBuilder();
            var inv = er.InvocationInfo;
            if (inv != null && !string.IsNullOrEmpty(inv.ScriptName) && inv.ScriptLineNumber > 0)
                sb.Append(inv.ScriptName).Append(':').Append(inv.ScriptLineNumber).Append(": ");
            sb.Append(er.ToString());
            Console.Error.WriteLine(sb.ToString());
        }
    }

    /// <summary>The part of pwsh's command line the project uses.</summary>
    internal sealed class Options
    {
        public const string Usage =
            "usage: StormatrixPwshHost [-NoLogo] [-NoProfile] [-NonInteractive] [-ExecutionPolicy P] [-OutputFormat Text]\n" +
            "                          (-File script.ps1 [args...] | -Command text|- | -EncodedCommand base64) | -Version";
        public string File;
        public string[] FileArgs;
        public string Command;
        public bool ShowVersion;

        public static Options Parse(string[] args)
        {
            var o = new Options();
            for (int i = 0; i < args.Length; i++)
            {
                string a = args[i];
                string name = a.StartsWith("-") || a.StartsWith("/") ? a.Substring(1).ToLowerInvariant() : null;
                string Next()
                {
                    if (i + 1 >= args.Length) throw new ArgumentException($"{a} needs a value");
                    return args[++i];
                }
                switch (name)
                {
                    case "nologo": case "noprofile": case "noninteractive": case "nol": case "nop": case "noni":
                        break;
                    case "executionpolicy": case "ep": case "ex": case "outputformat": case "of": case "inputformat":
                    case "if": case "windowstyle": case "w":
                        Next();
                        break;
                    case "version": case "v":
                        o.ShowVersion = true;
                        break;
                    case "file": case "f":
                        o.File = Next();
                        o.FileArgs = args.Skip(i + 1).ToArray();
                        return o;
                    case "command": case "c":
                        string text = Next();
                        if (text == "-") text = Console.In.ReadToEnd();
                        // pwsh joins what follows -Command into the command text
                        o.Command = string.Join(" ", new[] { text }.Concat(args.Skip(i + 1)));
                        return o;
                    case "encodedcommand": case "e": case "ec":
                        string b64 = Next();
                        try { o.Command = Encoding.Unicode.GetString(Convert.FromBase64String(b64)); }
                        catch (FormatException) { throw new ArgumentException("-EncodedCommand is not base64"); }
                        return o;
                    default:
                        if (name == null && o.File == null && o.Command == null)
                        {
                            // pwsh: a first bare argument is the file
                            o.File = a;
                            o.FileArgs = args.Skip(i + 1).ToArray();
                            return o;
                        }
                        throw new ArgumentException($"unknown argument {a}");
                }
            }
            if (!o.ShowVersion && o.File == null && o.Command == null)
                o.Command = Console.In.ReadToEnd();
            return o;
        }

        /// <summary>-Command/-EncodedCommand text; the last statement's $? decides the exit code, so it is
        /// captured on a line of its own.</summary>
        public string ScriptText() => Command + "\n$global:" + Program.LastStatusVariable + " = $?";

        /// <summary>-File as pwsh runs it: the script file as the pipeline's command (so that it is the first
        /// script processor and `exit N` reaches the host), its arguments parsed as pwsh's command-line
        /// parser does: "-Name" a parameter name, "-Name:value" a named value ("$true"/"$false" as
        /// booleans), anything else a positional string.</summary>
        public Command FileCommand()
        {
            // names keep their dash ("-Name"): that is what lets the binder pair "-Name" with the next
            // argument, as pwsh's CommandLineParameterParser passes them
            static object BoolIfPossible(string v) =>
                v.Length > 0 && bool.TryParse(v.Substring(v[0] == '$' ? 1 : 0), out bool b) ? b : v;
            static bool IsDash(char ch) => ch == '-' || ch == '\u2013' || ch == '\u2014' || ch == '\u2015';
            var c = new Command(Path.GetFullPath(File), false, false);
            string pending = null;
            foreach (string a in FileArgs)
            {
                if (pending != null) { c.Parameters.Add(new CommandParameter(pending, a)); pending = null; }
                else if (a.Length > 1 && IsDash(a[0]))
                {
                    int colon = a.IndexOf(':');
                    if (colon < 0) c.Parameters.Add(new CommandParameter(a));
                    else if (colon == a.Length - 1) pending = a.TrimEnd(':');
                    else c.Parameters.Add(new CommandParameter(a.Substring(0, colon), BoolIfPossible(a.Substring(colon + 1))));
                }
                else c.Parameters.Add(new CommandParameter(null, a));
            }
            if (pending != null) c.Parameters.Add(new CommandParameter(pending));
            return c;
        }
    }

    internal sealed class ConsoleHost : PSHost
    {
        private readonly Guid _id = Guid.NewGuid();
        private readonly ConsoleUI _ui = new ConsoleUI();
        public int? ExitCode;
        public override string Name => "StormatrixPwshHost";
        // pwsh's $Host.Version is the PowerShell version (7.6.9), not the assembly's (7.6.0.500)
        internal static readonly Version PSVersion = ReadPSVersion();
        private static Version ReadPSVersion()
        {
            var info = (System.Reflection.AssemblyInformationalVersionAttribute)Attribute.GetCustomAttribute(
                typeof(PSObject).Assembly, typeof(System.Reflection.AssemblyInformationalVersionAttribute));
            string text = info?.InformationalVersion ?? "";
            int cut = text.IndexOfAny(new[] { ' ', '+', '-' });
            return Version.TryParse(cut > 0 ? text.Substring(0, cut) : text, out Version v) ? v : typeof(PSObject).Assembly.GetName().Version;
        }
        public override Version Version => PSVersion;
        public override Guid InstanceId => _id;
        public override PSHostUserInterface UI => _ui;
        public override CultureInfo CurrentCulture => CultureInfo.CurrentCulture;
        public override CultureInfo CurrentUICulture => CultureInfo.CurrentUICulture;
        public override void SetShouldExit(int exitCode) => ExitCode = exitCode;
        public override void EnterNestedPrompt() => throw new NotSupportedException("nested prompts: the host is non-interactive");
        public override void ExitNestedPrompt() => throw new NotSupportedException();
        public override void NotifyBeginApplication() { }
        public override void NotifyEndApplication() { }
    }

    internal sealed class ConsoleUI : PSHostUserInterface
    {
        private readonly RawUI _raw = new RawUI();
        public override PSHostRawUserInterface RawUI => _raw;
        // The formatter emits $PSStyle escape sequences whatever OutputRendering says (pwsh's own console
        // host strips them when output is redirected); strip them here, as that host does.
        private static readonly System.Text.RegularExpressions.Regex Ansi = new System.Text.RegularExpressions.Regex("\x1b\\[[0-9;?]*[A-Za-z]");
        private static string Plain(string s) => s == null ? s : Ansi.Replace(s, "");
        public override void Write(string value) => Console.Out.Write(Plain(value));
        public override void Write(ConsoleColor foregroundColor, ConsoleColor backgroundColor, string value) => Console.Out.Write(Plain(value));
        public override void WriteLine(string value) => Console.Out.WriteLine(Plain(value));
        public override void WriteErrorLine(string value) => Console.Error.WriteLine(Plain(value));
        public override void WriteDebugLine(string message) => Console.Out.WriteLine("DEBUG: " + message);
        public override void WriteVerboseLine(string message) => Console.Out.WriteLine("VERBOSE: " + message);
        public override void WriteWarningLine(string message) => Console.Out.WriteLine("WARNING: " + message);
        public override void WriteProgress(long sourceId, ProgressRecord record) { }
        public override void WriteInformation(InformationRecord record) { }
        private static Exception NonInteractive() =>
            new PSInvalidOperationException("PowerShell is in NonInteractive mode. Read and Prompt functionality is not available.");
        public override string ReadLine() => throw NonInteractive();
        public override System.Security.SecureString ReadLineAsSecureString() => throw NonInteractive();
        public override Dictionary<string, PSObject> Prompt(string caption, string message, System.Collections.ObjectModel.Collection<FieldDescription> descriptions) => throw NonInteractive();
        public override PSCredential PromptForCredential(string caption, string message, string userName, string targetName) => throw NonInteractive();
        public override PSCredential PromptForCredential(string caption, string message, string userName, string targetName, PSCredentialTypes allowedCredentialTypes, PSCredentialUIOptions options) => throw NonInteractive();
        public override int PromptForChoice(string caption, string message, System.Collections.ObjectModel.Collection<ChoiceDescription> choices, int defaultChoice) => throw NonInteractive();
    }

    internal sealed class RawUI : PSHostRawUserInterface
    {
        public override ConsoleColor BackgroundColor { get; set; } = ConsoleColor.Black;
        public override ConsoleColor ForegroundColor { get; set; } = ConsoleColor.Gray;
        public override Size BufferSize { get; set; } = new Size(200, 3000);
        public override Coordinates CursorPosition { get; set; }
        public override int CursorSize { get; set; }
        public override bool KeyAvailable => false;
        public override Size MaxPhysicalWindowSize => new Size(200, 100);
        public override Size MaxWindowSize => new Size(200, 100);
        public override Coordinates WindowPosition { get; set; }
        public override Size WindowSize { get; set; } = new Size(200, 100);
        public override string WindowTitle { get; set; } = "";
        public override void FlushInputBuffer() { }
        public override BufferCell[,] GetBufferContents(Rectangle rectangle) => throw new NotSupportedException();
        public override KeyInfo ReadKey(ReadKeyOptions options) => throw new NotSupportedException();
        public override void ScrollBufferContents(Rectangle source, Coordinates destination, Rectangle clip, BufferCell fill) => throw new NotSupportedException();
        public override void SetBufferContents(Coordinates origin, BufferCell[,] contents) => throw new NotSupportedException();
        public override void SetBufferContents(Rectangle rectangle, BufferCell fill) => throw new NotSupportedException();
    }
}
