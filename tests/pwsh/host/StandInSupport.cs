// Engine-side helpers for the cmdlet stand-ins (tests/pwsh/StandIns): what a script function cannot do
// but a compiled cmdlet does, reached through the engine's own (internal) members of the pinned 7.6.9.
using System;
using System.Management.Automation;
using System.Reflection;

namespace Microsoft.PowerShell.Commands
{
    /// <summary>The exception Write-Error -Message wraps its text in (Microsoft.PowerShell.Commands.Utility
    /// defines it; the engine package does not), so `-ExceptionType` checks see the same type.</summary>
    public class WriteErrorException : SystemException
    {
        public WriteErrorException() : base("Error") { }
        public WriteErrorException(string message) : base(message) { }
        public WriteErrorException(string message, Exception innerException) : base(message, innerException) { }
    }
}

namespace Stormatrix.PwshHost
{
    public static class StandInSupport
    {
        private static readonly MethodInfo SetInvocationInfo =
            typeof(ErrorRecord).GetMethod("SetInvocationInfo", BindingFlags.Instance | BindingFlags.NonPublic);
        private static readonly PropertyInfo PreserveOnce =
            typeof(ErrorRecord).GetProperty("PreserveInvocationInfoOnce", BindingFlags.Instance | BindingFlags.NonPublic);

        private const BindingFlags Internal = BindingFlags.Instance | BindingFlags.NonPublic;

        private static object SessionStateInternal(SessionState state) =>
            typeof(SessionState).GetProperty("Internal", Internal).GetValue(state);

        /// <summary>Remove-Variable: the names (wildcards allowed) that <paramref name="scope"/> holds, or,
        /// without a scope, the nearest definition of each name seen from the caller, which is scope "1"
        /// relative to the stand-in function's own scope. Returns the names it could not find.</summary>
        public static string[] RemoveVariable(SessionState state, string[] names, string scope, bool force)
        {
            if (string.IsNullOrEmpty(scope)) scope = null;   // PowerShell passes $null to a string parameter as ""
            object ssi = SessionStateInternal(state);
            Type t = ssi.GetType();
            MethodInfo tableAt = t.GetMethod("GetVariableTableAtScope", Internal, null, new[] { typeof(string) }, null);
            MethodInfo removeAt = t.GetMethod("RemoveVariableAtScope", Internal, null, new[] { typeof(string), typeof(string), typeof(bool) }, null);
            MethodInfo getAt = t.GetMethod("GetVariableAtScope", Internal, null, new[] { typeof(string), typeof(string) }, null);
            var missing = new System.Collections.Generic.List<string>();
            foreach (string name in names)
            {
                var pattern = WildcardPattern.Get(name, WildcardOptions.IgnoreCase);
                bool wildcard = WildcardPattern.ContainsWildcardCharacters(name);
                bool found = false;
                foreach (string id in ScopeIds(scope))
                {
                    System.Collections.IDictionary table;
                    try { table = (System.Collections.IDictionary)tableAt.Invoke(ssi, new object[] { id }); }
                    catch (TargetInvocationException) { break; }   // past the global scope
                    var hits = new System.Collections.Generic.List<string>();
                    if (wildcard)
                    {
                        foreach (object key in table.Keys) { if (pattern.IsMatch((string)key)) hits.Add((string)key); }
                    }
                    else if (getAt.Invoke(ssi, new object[] { name, id }) != null)
                    {
                        hits.Add(name);   // also finds a function's optimised locals, which the table does not list
                    }
                    foreach (string k in hits)
                    {
                        try { removeAt.Invoke(ssi, new object[] { k, id, force }); }
                        catch (TargetInvocationException e) when (e.InnerException != null) { throw e.InnerException; }
                    }
                    if (hits.Count > 0) { found = true; if (scope == null) break; }
                    if (scope != null) break;
                }
                if (!found && !wildcard) missing.Add(name);
            }
            return missing.ToArray();
        }

        private static System.Collections.Generic.IEnumerable<string> ScopeIds(string scope)
        {
            if (scope == null)
            {
                for (int i = 1; i < 1000; i++) yield return i.ToString(System.Globalization.CultureInfo.InvariantCulture);
                yield break;
            }
            if (int.TryParse(scope, out int n)) { yield return (n + 1).ToString(System.Globalization.CultureInfo.InvariantCulture); yield break; }
            if (string.Equals(scope, "Local", StringComparison.OrdinalIgnoreCase) || string.Equals(scope, "Private", StringComparison.OrdinalIgnoreCase)) { yield return "1"; yield break; }
            yield return scope;   // Global, Script
        }

        /// <summary>Write-Error: the record carries the caller's invocation (script, line, command name), not
        /// the stand-in's, as WriteErrorCommand arranges; then the cmdlet's WriteError applies -ErrorAction.</summary>
        public static void WriteErrorAsCaller(PSCmdlet cmdlet, ErrorRecord record, InvocationInfo caller)
        {
            if (caller != null && SetInvocationInfo != null && PreserveOnce != null)
            {
                SetInvocationInfo.Invoke(record, new object[] { caller });
                PreserveOnce.SetValue(record, true);
            }
            cmdlet.WriteError(record);
        }
    }
}
