"""The Proxmox stand-in's API schema and property strings: Proxmox's own rules, reimplemented here on
purpose (never the backend's parser), so a mistake in the backend is not mirrored by the stand-in.

Requests are validated against ``tests/data/pve-api-qemu.json`` (a subset of Proxmox's API schema) plus
:data:`EXTRA_SCHEMA` for the task endpoints it lacks; a bad parameter is HTTP 400 "Parameter
verification failed." with per-parameter ``errors``, as Proxmox answers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "data" / "pve-api-qemu.json"
#: the fleet endpoints (clone, template, nextid, resources, storages, volumes, destroy) of Proxmox's schema
FLEET_SCHEMA_PATH = SCHEMA_PATH.with_name("pve-api-fleet.json")

# Endpoints the backend uses that the subset schema lacks, with Proxmox's documented parameters.
EXTRA_SCHEMA: dict[str, dict[str, Any]] = {
    "/nodes/{node}/tasks/{upid}/log": {"GET": {"parameters": {"additionalProperties": 0, "properties": {
        "node": {"type": "string", "format": "pve-node"},
        "upid": {"type": "string"},
        "start": {"type": "integer", "minimum": 0, "optional": 1},
        "limit": {"type": "integer", "minimum": 0, "optional": 1},
        "download": {"type": "boolean", "optional": 1},
    }}}},
    # pve-manager PVE/API2/Storage/Config.pm read (not in the qemu subset schema)
    "/storage/{storage}": {"GET": {"parameters": {"additionalProperties": 0, "properties": {
        "storage": {"type": "string", "format": "pve-storage-id"},
    }}}},
    # pve-manager PVE/API2/Tasks.pm node_tasks
    "/nodes/{node}/tasks": {"GET": {"parameters": {"additionalProperties": 0, "properties": {
        "node": {"type": "string", "format": "pve-node"},
        "start": {"type": "integer", "minimum": 0, "optional": 1},
        "limit": {"type": "integer", "minimum": 0, "optional": 1},
        "userfilter": {"type": "string", "optional": 1},
        "typefilter": {"type": "string", "optional": 1},
        "vmid": {"type": "integer", "minimum": 100, "maximum": 999999999, "optional": 1},
        "errors": {"type": "boolean", "optional": 1},
        "source": {"type": "string", "enum": ["archive", "active", "all"], "optional": 1},
        "since": {"type": "integer", "optional": 1},
        "until": {"type": "integer", "optional": 1},
        "statusfilter": {"type": "string", "optional": 1},
    }}}},
}


class ApiError(Exception):
    def __init__(self, status: int, message: str, errors: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.errors = status, message, errors


def param_error(errors: dict[str, str]) -> ApiError:
    return ApiError(400, "Parameter verification failed.", errors)


# --- property strings (Proxmox's own rules, reimplemented here on purpose) ---------------------------

def parse_propstring(text: str, fmt: dict[str, Any], name: str) -> dict[str, Any]:
    """Validate and parse like ``PVE::JSONSchema::parse_property_string``; raise ApiError on errors."""
    default_key = next((k for k, v in fmt.items() if v.get("default_key")), None)
    out: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for part in text.split(","):
        if not part:
            continue
        if "=" in part:
            k, _, v = part.partition("=")
        elif default_key:
            k, v = default_key, part
        else:
            errors[name] = f"invalid format - value without key, but schema does not define a default key"
            break
        spec = fmt.get(k)
        if spec is not None and "keyAlias" in spec:  # net0: virtio=MAC -> model=virtio, macaddr=MAC
            if spec["keyAlias"] in out:
                errors[f"{name}.{spec['keyAlias']}"] = "duplicate key in comma-separated list property"
                continue
            out[spec["keyAlias"]] = k
            k, spec = spec["alias"], fmt[spec["alias"]]
        elif spec is not None and "alias" in spec:
            k, spec = spec["alias"], fmt[spec["alias"]]
        if spec is None:
            errors[f"{name}.{k}"] = "property is not defined in schema and the schema does not allow additional properties"
            continue
        if k in out:
            errors[f"{name}.{k}"] = "duplicate key in comma-separated list property"
            continue
        problem, value = check_value(v, spec)
        if problem:
            errors[f"{name}.{k}"] = problem
        out[k] = value
    for k, spec in fmt.items():
        if "alias" not in spec and not spec.get("optional") and k not in out and "default" not in spec:
            errors[f"{name}.{k}"] = "property is missing and it is not optional"
    if errors:
        errors.setdefault(name, "invalid format - format error")
        raise param_error(errors)
    return out


def print_propstring(data: dict[str, Any], fmt: dict[str, Any]) -> str:
    """``PVE::JSONSchema::print_property_string``: the default key's bare value first, then sorted keys."""
    default_key = next((k for k, v in fmt.items() if v.get("default_key")), None)
    parts = []
    # a key alias (net0's model=virtio + macaddr=MAC) prints as "virtio=MAC", first, as qemu-server writes it
    paired = next(((spec["keyAlias"], spec["alias"]) for spec in fmt.values()
                   if "keyAlias" in spec and spec["keyAlias"] in data and spec["alias"] in data), None)
    if paired:
        parts.append(f"{data[paired[0]]}={data[paired[1]]}")
    elif default_key and default_key in data:
        parts.append(str(data[default_key]))
    parts += [f"{k}={data[k]}" for k in sorted(data) if k != default_key and k not in (paired or ())]
    return ",".join(parts)


_BOOL = {"1": 1, "on": 1, "yes": 1, "true": 1, "0": 0, "off": 0, "no": 0, "false": 0}
_CONFIGID = re.compile(r"^[a-z][a-z_\-]*\d*$")


def check_value(raw: Any, spec: dict[str, Any]) -> tuple[str | None, Any]:
    """(problem or None, normalized value) for one scalar against its schema entry."""
    typ = spec.get("type", "string")
    if typ == "array":  # form-encoded as the key repeated (command=fio&command=--version)
        items = raw if isinstance(raw, list) else [raw]
        out = []
        for item in items:
            problem, value = check_value(item, spec.get("items", {}))
            if problem:
                return problem, items
            out.append(value)
        return None, out
    if isinstance(raw, list):
        return f"type check ('{typ}') failed - got a list", raw
    text = str(raw)
    if typ == "boolean":
        if text.lower() not in _BOOL:
            return f"type check ('boolean') failed - got '{text}'", text
        return None, _BOOL[text.lower()]
    if typ == "integer":
        if not re.fullmatch(r"[+-]?\d+", text):
            return f"type check ('integer') failed - got '{text}'", text
        value: Any = int(text)
    elif typ == "number":
        try:
            value = float(text)
        except ValueError:
            return f"type check ('number') failed - got '{text}'", text
    else:
        value = text
    if typ in ("integer", "number"):
        if "minimum" in spec and value < spec["minimum"]:
            return f"value must have a minimum value of {spec['minimum']}", value
        if "maximum" in spec and value > spec["maximum"]:
            return f"value must have a maximum value of {spec['maximum']}", value
        return None, value
    if "enum" in spec and text not in spec["enum"]:
        return f"value '{text}' does not have a value in the enumeration '{', '.join(spec['enum'])}'", text
    if "maxLength" in spec and len(text) > spec["maxLength"]:
        return f"value may only be {spec['maxLength']} characters long", text
    if "pattern" in spec:
        pattern = re.sub(r"^\(\?\^:(.*)\)$", r"\1", spec["pattern"])
        if not re.fullmatch(pattern, text):
            return f"value does not match the regex pattern", text
    fmt = spec.get("format")
    if fmt == "pve-configid-list":
        for item in re.split(r"[,;\s]+", text.strip()):
            if item and not _CONFIGID.match(item):
                return f"invalid format - invalid configuration ID '{item}'", text
    elif fmt == "pve-cpuset":
        # the VM's ``affinity`` (the reference schema: "List of host cores used to execute guest processes, for
        # example: 0,5,8-11"): pve-common's PVE::CpuSet::parse_cpuset, which accepts comma-separated numbers and
        # ranges N-M with M >= N, surrounding blanks allowed, and the format check's one message for anything else
        for part in text.split(","):
            m = re.fullmatch(r"\s*(\d+)(?:-(\d+))?\s*", part)
            if not m or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
                return "invalid format - unable to parse cpuset option", text
    elif fmt == "pve-node":
        if not re.fullmatch(r"[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?", text):
            return f"invalid format - value does not look like a valid node name", text
    return None, value


# --- the schema --------------------------------------------------------------------------------------

class Schema:
    def __init__(self, path: Path = SCHEMA_PATH) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        for template, methods in json.loads(FLEET_SCHEMA_PATH.read_text(encoding="utf-8")).items():
            data.setdefault(template, {}).update(methods)
        data.update(EXTRA_SCHEMA)
        self.routes: list[tuple[re.Pattern[str], str, dict[str, Any]]] = []
        for template, methods in data.items():
            rx = "^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template)) + "$"
            self.routes.append((re.compile(rx), template, methods))

    def match(self, method: str, path: str) -> tuple[str, dict[str, str], dict[str, Any]]:
        for rx, template, methods in self.routes:
            m = rx.match(path)
            if m:
                if method not in methods:
                    raise ApiError(501, f"Method '{method} {path}' not implemented")
                return template, {k: unquote(v) for k, v in m.groupdict().items()}, methods[method]
        raise ApiError(501, f"Method '{method} {path}' not implemented")

    @staticmethod
    def validate(info: dict[str, Any], params: dict[str, str]) -> dict[str, Any]:
        props: dict[str, Any] = info.get("parameters", {}).get("properties", {})
        indexed = {k[:-3]: v for k, v in props.items() if k.endswith("[n]")}
        errors: dict[str, str] = {}
        out: dict[str, Any] = {}
        for key, raw in params.items():
            spec = props.get(key)
            if spec is None:
                m = re.match(r"^([a-z]+)(\d+)$", key)
                if m and m.group(1) in indexed:
                    spec = indexed[m.group(1)]
                    limit = re.search(r"n is 0 to (\d+)", spec.get("description", ""))
                    if limit and int(m.group(2)) > int(limit.group(1)):
                        spec = None
            if spec is None:
                errors[key] = "property is not defined in schema and the schema does not allow additional properties"
                continue
            if isinstance(spec.get("format"), dict):
                try:
                    out[key] = parse_propstring(str(raw), spec["format"], key)
                except ApiError as exc:
                    errors.update(exc.errors or {})
                continue
            problem, value = check_value(raw, spec)
            if problem:
                errors[key] = problem
            out[key] = value
        for key, spec in props.items():
            if key.endswith("[n]") or spec.get("optional") or key in params:
                continue
            errors[key] = "property is missing and it is not optional"
        for key, spec in props.items():
            req = spec.get("requires")
            if key in params and req and req not in params:
                errors[key] = f"missing property - '{key}' requires this property"
        if errors:
            raise param_error(errors)
        return out

