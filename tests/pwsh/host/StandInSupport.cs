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
