// JSON for the ConvertTo-Json / ConvertFrom-Json stand-ins (tests/pwsh/StandIns/Json.ps1).
//
// Why in C#: the real cmdlets (Microsoft.PowerShell.Commands.Utility, JsonObject.cs) are a thin layer
// over Newtonsoft.Json, which the engine package brings along. This class follows that layer's rules
// (what becomes an object, an array, a string; -Depth counting and the truncation to ToString(); long
// enums as strings; PSCustomObject from JObject, Int64 for integers, [datetime] for ISO-8601 strings
// through Newtonsoft's DateParseHandling) and lets Newtonsoft do the parsing and the writing, so text
// and types come out as pwsh 7 makes them. Only the stand-ins call it; under a real pwsh it is unused.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.Management.Automation;
using System.Numerics;
using System.Reflection;
using Newtonsoft.Json;
using Newtonsoft.Json.Converters;
using Newtonsoft.Json.Linq;

namespace Stormatrix.PwshHost
{
    public static class StandInJson
    {
        /// <summary>ConvertTo-Json: the JSON text of <paramref name="input"/>; <paramref name="truncated"/>
        /// says whether -Depth cut it (the cmdlet then warns once).</summary>
        public static string ConvertTo(object input, int maxDepth, bool compress, bool enumsAsStrings,
                                       string escapeHandling, out bool truncated)
        {
            var ctx = new Context { MaxDepth = maxDepth };
            object tree = ProcessValue(input, 0, ctx);
            truncated = ctx.Truncated;
            var settings = new JsonSerializerSettings
            {
                TypeNameHandling = TypeNameHandling.None,
                MaxDepth = 1024,
                StringEscapeHandling = escapeHandling switch
                {
                    "EscapeNonAscii" => StringEscapeHandling.EscapeNonAscii,
                    "EscapeHtml" => StringEscapeHandling.EscapeHtml,
                    _ => StringEscapeHandling.Default,
                },
            };
            if (enumsAsStrings) settings.Converters.Add(new StringEnumConverter());
            if (!compress) settings.Formatting = Formatting.Indented;
            return JsonConvert.SerializeObject(tree, settings);
        }

        private sealed class Context
        {
            public int MaxDepth;
            public bool Truncated;
        }

        private static object ProcessValue(object obj, int depth, Context ctx)
        {
            PSObject pso = obj as PSObject;
            if (pso != null) obj = pso.BaseObject;
            object rv;
            bool isCustomObj = false;
            if (obj == null || DBNull.Value.Equals(obj) || obj == System.Management.Automation.Language.NullString.Value)
            {
                rv = null;
            }
            else if (obj is string || obj is char || obj is bool || obj is DateTime || obj is DateTimeOffset
                     || obj is Guid || obj is Uri || obj is double || obj is float || obj is decimal || obj is BigInteger)
            {
                rv = obj;
            }
            else if (obj is JObject jObject)
            {
                rv = jObject.ToObject<Dictionary<object, object>>();
            }
            else
            {
                Type t = obj.GetType();
                if (t.IsPrimitive)
                {
                    rv = obj;
                }
                else if (t.IsEnum)
                {
                    // JavaScript numbers cannot hold every Int64/UInt64: pwsh writes those enums as names
                    Type u = Enum.GetUnderlyingType(t);
                    rv = u == typeof(long) || u == typeof(ulong) ? obj.ToString() : obj;
                }
                else
                {
                    if (depth > ctx.MaxDepth)
                    {
                        ctx.Truncated = true;
                        if (pso != null && pso.ImmediateBaseObject is PSCustomObject)
                            return LanguagePrimitives.ConvertTo(pso, typeof(string), CultureInfo.InvariantCulture);
                        return LanguagePrimitives.ConvertTo(obj, typeof(string), CultureInfo.InvariantCulture);
                    }
                    if (obj is IDictionary dict)
                        rv = ProcessDictionary(dict, depth, ctx);
                    else if (obj is IEnumerable en)
                        rv = ProcessEnumerable(en, depth, ctx);
                    else
                    {
                        rv = ProcessCustomObject(obj, depth, ctx);
                        isCustomObj = true;
                    }
                }
            }
            return AddPsProperties(pso, rv, depth, isCustomObj, ctx);
        }

        private static object ProcessDictionary(IDictionary dict, int depth, Context ctx)
        {
            var result = new Dictionary<string, object>(dict.Count);
            foreach (DictionaryEntry entry in dict)
            {
                object key = entry.Key is PSObject pk ? pk.BaseObject : entry.Key;
                if (key is not string name)
                {
                    throw new InvalidOperationException(string.Format(CultureInfo.CurrentCulture,
                        "The type '{0}' is not supported for serialization or deserialization of a dictionary. Keys must be strings.",
                        dict.GetType().FullName));
                }
                result.Add(name, ProcessValue(entry.Value, depth + 1, ctx));
            }
            return result;
        }

        private static object ProcessEnumerable(IEnumerable en, int depth, Context ctx)
        {
            var result = new List<object>();
            foreach (object o in en) result.Add(ProcessValue(o, depth + 1, ctx));
            return result;
        }

        private static object ProcessCustomObject(object o, int depth, Context ctx)
        {
            var result = new Dictionary<string, object>();
            Type t = o.GetType();
            foreach (FieldInfo info in t.GetFields(BindingFlags.Public | BindingFlags.Instance))
            {
                if (info.IsDefined(typeof(JsonIgnoreAttribute), true)) continue;
                object value;
                try { value = info.GetValue(o); } catch (Exception) { value = null; }
                result.TryAdd(info.Name, ProcessValue(value, depth + 1, ctx));
            }
            foreach (PropertyInfo info in t.GetProperties(BindingFlags.Public | BindingFlags.Instance))
            {
                if (info.IsDefined(typeof(JsonIgnoreAttribute), true)) continue;
                MethodInfo getter = info.GetGetMethod();
                if (getter == null || getter.GetParameters().Length > 0) continue;
                object value;
                try { value = getter.Invoke(o, Array.Empty<object>()); } catch (Exception) { value = null; }
                result.TryAdd(info.Name, ProcessValue(value, depth + 1, ctx));
            }
            return result;
        }

        private static object AddPsProperties(PSObject pso, object obj, int depth, bool isCustomObj, Context ctx)
        {
            if (pso == null) return obj;
            bool wasDictionary = true;
            if (obj is not IDictionary dict)
            {
                wasDictionary = false;
                dict = new Dictionary<string, object> { { "value", obj } };
            }
            PSMemberViewTypes view = isCustomObj ? PSMemberViewTypes.Extended | PSMemberViewTypes.Adapted : PSMemberViewTypes.Extended;
            foreach (PSMemberInfo member in pso.Members)
            {
                if (member is not PSPropertyInfo prop) continue;
                if (!IsInView(pso, prop, view)) continue;
                object value = null;
                try { value = prop.Value; } catch (Exception) { }
                if (!dict.Contains(prop.Name)) dict[prop.Name] = ProcessValue(value, depth + 1, ctx);
            }
            if (!wasDictionary && dict.Count == 1) return obj;
            return dict;
        }

        // Extended = members added to this instance or by types.ps1xml (note/script/alias/code properties);
        // Adapted = the .NET object's own properties as the adapter shows them.
        private static bool IsInView(PSObject pso, PSPropertyInfo prop, PSMemberViewTypes view)
        {
            bool adapted = prop is PSProperty || prop.GetType().Name == "PSAdaptedProperty";
            if (adapted) return (view & PSMemberViewTypes.Adapted) != 0;
            return (view & PSMemberViewTypes.Extended) != 0;
        }

        // ---------------------------------------------------------------------------------------------
        /// <summary>ConvertFrom-Json for one complete JSON text: PSCustomObject/object[] or, with
        /// asHashtable, OrderedHashtable. Throws ArgumentException("Conversion from JSON failed ...").</summary>
        public static object ConvertFrom(string input, bool asHashtable, int maxDepth, string dateKind)
        {
            var settings = new JsonSerializerSettings
            {
                TypeNameHandling = TypeNameHandling.None,
                MetadataPropertyHandling = MetadataPropertyHandling.Ignore,
                MaxDepth = maxDepth,
            };
            switch (dateKind ?? "Default")
            {
                case "Local": settings.DateTimeZoneHandling = DateTimeZoneHandling.Local; break;
                case "Utc": settings.DateTimeZoneHandling = DateTimeZoneHandling.Utc; break;
                case "Offset": settings.DateParseHandling = DateParseHandling.DateTimeOffset; break;
                case "String": settings.DateParseHandling = DateParseHandling.None; break;
                default: break;   // DateParseHandling.DateTime, DateTimeZoneHandling.RoundtripKind
            }
            object obj;
            try
            {
                obj = JsonConvert.DeserializeObject(input, settings);
            }
            catch (JsonException je)
            {
                throw new ArgumentException(string.Format(CultureInfo.CurrentCulture,
                    "Conversion from JSON failed with error: {0}", je.Message), je);
            }
            return Convert(obj, asHashtable);
        }

        private static object Convert(object obj, bool asHashtable)
        {
            switch (obj)
            {
                case JObject d:
                    return asHashtable ? ToHashtable(d) : ToPSObject(d);
                case JArray a:
                    var list = new List<object>(a.Count);
                    foreach (JToken t in a) list.Add(Convert(t, asHashtable));
                    return list.ToArray();
                case JValue v:
                    return v.Value;
                default:
                    return obj;
            }
        }

        private static PSObject ToPSObject(JObject d)
        {
            var result = new PSObject();
            var seen = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
            foreach (JProperty p in d.Properties())
            {
                if (p.Name.Length == 0)
                    throw new InvalidOperationException("The provided JSON includes a property whose name is an empty string, this is only supported using the -AsHashTable switch.");
                if (seen.TryGetValue(p.Name, out string existing))
                {
                    throw new InvalidOperationException(string.Format(CultureInfo.CurrentCulture,
                        "Cannot convert the JSON string because it contains keys with different casing. Please use the -AsHashTable switch instead. The key that was attempted to be added to the existing key '{0}' was '{1}'.",
                        existing, p.Name));
                }
                seen[p.Name] = p.Name;
                result.Properties.Add(new PSNoteProperty(p.Name, Convert(p.Value, false)));
            }
            return result;
        }

        private static OrderedHashtable ToHashtable(JObject d)
        {
            var result = new OrderedHashtable(d.Count);
            foreach (JProperty p in d.Properties())
            {
                // JSON keeps the last of repeated keys, as Newtonsoft's JObject already did
                result[p.Name] = Convert(p.Value, true);
            }
            return result;
        }
    }
}
