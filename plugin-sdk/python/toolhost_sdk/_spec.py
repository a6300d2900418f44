"""Tool declarations: the `tool` decorator and `plugin` call record what the author wrote;
`derive` turns a function's signature, type hints and docstring into its manifest entry, and
`decode`/`encode_result` convert arguments and results at call time with the same types.

Every misuse becomes a `Misuse` naming the author's file and line, never a traceback.
"""

import ast
import dataclasses
import inspect
import json
import os
import re
import sys
import types
import typing

# Manifest format version written by this SDK (the host accepts exactly the versions it knows).
FORMAT = 1

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PLUGIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")

# The host's caps on a manifest's free text (host/spec/src/manifest.rs), in characters (what `len`
# counts); schemas in bytes of compact JSON. Checked here so that what builds, loads.
MAX_PLUGIN_DESCRIPTION = 1024
MAX_TOOL_DESCRIPTION = 4096
MAX_PARAM_DESCRIPTION = 1024
MAX_LABEL = 64  # version and category: one line each
MAX_SCHEMA_BYTES = 16 * 1024
MAX_TITLE = 128  # a tool's title: one line
MAX_ICONS = 4  # icons per tool
MAX_ICON_BYTES = 8 * 1024  # one icon's `data:` URI
ICON_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
_ICON_MAGIC = {"image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",),
               "image/gif": (b"GIF87a", b"GIF89a"), "image/webp": (b"RIFF",)}
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}\Z")
# The host's caps on names: a plugin, tool or param name, and a program an `exec` request names.
MAX_NAME = 64
MAX_PROGRAM = 255


def quoted(v):
    """`v` in double quotes, as the Rust and JavaScript SDKs show a value."""
    return json.dumps(v, ensure_ascii=False)


def plugin_name_problem(name):
    """Why `name` is not a plugin name the host accepts, or None."""
    if _PLUGIN_NAME.match(name) and len(name) <= MAX_NAME:
        return None
    return f"plugin name {quoted(name)} must match [A-Za-z_][A-Za-z0-9_-]* (at most {MAX_NAME} chars)"


_PROGRAM = re.compile(r"[A-Za-z0-9._+-]+\Z")
# A bucket of the key-value store a `kv` request names (the host's rule, `capabilities.kv`).
_BUCKET = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
BUCKET_RULE = "is not a bucket name (1–64 letters, digits, '_', '-' or '.', starting with a letter or digit)"


def request_problem(kind, value):
    """Why `value` is not a request of `kind` (env, net, secret, exec, kv), or None."""
    if kind == "env" and (not value or "=" in value or "\0" in value):
        return f"`env` entry {quoted(value)} is not an environment variable name"
    if kind == "net" and (not value or any(c.isspace() for c in value)):
        return (f"`net` entry {quoted(value)} is not a host pattern such as \"api.example.com\", "
                "\"*.example.com\" or \"*\"")
    if kind == "secret" and not value.strip():
        return f"`secret` entry {quoted(value)} is not a secret name such as \"api_token\""
    if kind == "exec" and value != "*" and (
        not _PROGRAM.match(value) or len(value) > MAX_PROGRAM or value in (".", "..")
    ):
        return (f"`exec` entry {quoted(value)} is not a program name such as \"git\" (no paths: the operator "
                "decides which executable a name runs; \"*\" asks for any program the operator grants)")
    if kind == "kv" and not _BUCKET.match(value):
        return f"`kv` entry {quoted(value)} {BUCKET_RULE}"
    return None


def _is_control(c):
    o = ord(c)
    return o < 0x20 or 0x7F <= o <= 0x9F


def text_problem(text, limit, description):
    """Why `text` breaks the host's rules for free text, or None: longer than `limit`
    characters, or a control character (tabs and line breaks are allowed in a description)."""
    if len(text) > limit:
        return f"is {len(text)} characters long; the host allows at most {limit}"
    for c in text:
        if _is_control(c) and not (description and c in "\t\n\r"):
            rule = ("only tabs and line breaks are allowed besides printable text" if description
                    else "it must be one line of printable text")
            return f"contains the control character U+{ord(c):04X}; {rule}"
    return None


def icon_problem(src):
    """Why `src` is not an icon the host takes, or None: a base64 `data:` URI of one of
    ICON_TYPES, at most MAX_ICON_BYTES long, whose bytes start the way that type starts."""
    n = len(src.encode("utf-8"))
    if n > MAX_ICON_BYTES:
        return f"is {n} bytes long; at most {MAX_ICON_BYTES} are allowed"
    if not src.startswith("data:"):
        return "must be a `data:` URI (data:image/png;base64,…): icons are never fetched"
    mime, sep, data = src[5:].partition(";base64,")
    if not sep:
        return "must be a base64 `data:` URI (data:image/png;base64,…)"
    if mime not in ICON_TYPES:
        return f"has the type {quoted(mime)}; an icon is one of {', '.join(ICON_TYPES)}"
    if not data or len(data) % 4 or not _BASE64.match(data):
        return "is not valid base64"
    import base64
    head = base64.b64decode(data[:16])
    if not any(head.startswith(m) for m in _ICON_MAGIC[mime]) or (mime == "image/webp" and head[8:12] != b"WEBP"):
        return f"does not hold {mime} data"
    return None


def schema_problem(schema):
    """Why a JSON Schema is too large for the host, or None."""
    n = len(json.dumps(schema, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    if n > MAX_SCHEMA_BYTES:
        return f"is {n} bytes of JSON; the host allows at most {MAX_SCHEMA_BYTES}"
    return None


class Misuse(Exception):
    """A mistake in the plugin's declarations, reported as `FILE:LINE: error: message`."""

    def __init__(self, file, line, message):
        super().__init__(message)
        self.file = file
        self.line = line
        self.message = message

    def render(self):
        return f"{_shown_path(self.file)}:{self.line}: error: {self.message}"


def _shown_path(path):
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


class ToolError(Exception):
    """Raise it from a tool: its message is the error the model reads, as it is."""


# What the decorators recorded, in declaration order. `_project.load` clears it per project.
_tools = []
_plugins = []


def _caller(depth=2):
    frame = sys._getframe(depth)
    return frame.f_code.co_filename, frame.f_lineno


class _ToolDecl:
    __slots__ = ("func", "options", "file", "line", "spec")

    def __init__(self, func, options, file, line):
        self.func = func
        self.options = options
        self.file = file
        self.line = line
        self.spec = None


_TOOL_OPTIONS = ("name", "danger", "read_only", "rest", "output_limit", "category", "output_schema",
                 "timeout_ms", "task_support", "title", "idempotent", "icons")

# The longest time limit a tool may ask for (a day, the host's cap on `timeoutMs`).
MAX_TIMEOUT_MS = 24 * 60 * 60 * 1000
_TASK_SUPPORT = ("forbidden", "optional", "required")


def tool(func=None, **options):
    """Make a module-level function a tool of this plugin.

    Use it bare (`@tool`) or with options (`@tool(rest=True, category="text")`): `name`,
    `danger`, `read_only`, `rest`, `output_limit`, `category`, `output_schema` (a dataclass or
    TypedDict, or a JSON Schema dict for an object; by default derived from a dataclass or
    TypedDict return annotation), `timeout_ms` (the time limit the tool asks for, 1 ms to a day;
    the host grants at most its `[limits] max_timeout_ms`), `task_support` (`"optional"` or
    `"required"`: an MCP client that takes tasks gets a task id at once), `title` (a name for
    people), `idempotent` (calling it again with the same arguments changes nothing more), `icons`
    (a list of `data:image/png;base64,…` URIs). The function itself is returned unchanged, so
    tests call it directly.
    """
    file, line = _caller()

    def register(f):
        _tools.append(_ToolDecl(f, options, file, line))
        return f

    if func is not None:
        if not callable(func):
            raise Misuse(file, line, "write `@tool` or `@tool(option=...)`; options are keywords")
        return register(func)
    return register


def plugin(**options):
    """Declare the plugin: `name`, `version`, `description` (defaults: `[project]` in
    pyproject.toml) and capability requests `fs="workspace:rw"` (or `:ro`), `env="VAR"`,
    `net="host"`, `secret="NAME"`, `exec="git"` (a program run with `process.run`; `"*"`: any
    program the operator grants), `kv="default"` (a bucket of the key-value store, `kv.open`);
    each request takes a string or a list of strings.
    A request is only a request: the operator grants."""
    file, line = _caller()
    _plugins.append((options, file, line))


# ---------------------------------------------------------------------------------------------
# Source positions: errors point at the author's parameter or docstring line.

_ast_cache = {}


def _def_node(func):
    code = func.__code__
    tree = _ast_cache.get(code.co_filename)
    if tree is None:
        try:
            with open(code.co_filename, encoding="utf-8") as f:
                tree = ast.parse(f.read(), code.co_filename)
        except (OSError, SyntaxError, ValueError):
            tree = ast.Module(body=[], type_ignores=[])
        _ast_cache[code.co_filename] = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func.__name__:
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if code.co_firstlineno in (first, node.lineno):
                return node
    return None


# ---------------------------------------------------------------------------------------------
# Types: what a parameter's annotation means for the manifest and for decoding.

_NoneType = type(None)


class _Unsupported(Exception):
    pass


def _is_typeddict(tp):
    return typing.is_typeddict(tp)


def _unwrap_optional(tp):
    """`Optional[X]` / `X | None` → (X, True); anything else → (tp, False)."""
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(tp) if a is not _NoneType]
        if len(args) != len(typing.get_args(tp)):
            if len(args) == 1:
                return args[0], True
            raise _Unsupported(
                f"`{_type_name(tp)}`: a union of several types is not supported; use one type or `Optional[T]`"
            )
    return tp, False


def _type_name(tp):
    if isinstance(tp, type) and typing.get_origin(tp) is None:
        return tp.__name__
    return str(tp).replace("typing.", "")


def _hints(cls):
    try:
        return typing.get_type_hints(cls)
    except Exception as e:  # an unresolvable forward reference
        raise _Unsupported(f"cannot resolve the type hints of `{cls.__name__}`: {e}") from None


def schema(tp, seen=()):
    """JSON Schema for a type inside JSON (a param's type, a field's type)."""
    if tp is typing.Any:
        return {}
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is _NoneType:
        return {"type": "null"}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is list or origin is list:
        out = {"type": "array"}
        if args:
            out["items"] = schema(args[0], seen)
        return out
    if tp is dict or origin is dict:
        out = {"type": "object"}
        if args:
            if args[0] is not str:
                raise _Unsupported(f"`{_type_name(tp)}`: JSON object keys are strings; use `dict[str, ...]`")
            out["additionalProperties"] = schema(args[1], seen)
        return out
    if origin is typing.Literal:
        if not all(isinstance(a, (str, int, bool)) for a in args):
            raise _Unsupported(f"`{_type_name(tp)}`: Literal values must be str, int or bool")
        return {"enum": list(args)}
    inner, optional = _unwrap_optional(tp)
    if optional:
        return {"anyOf": [schema(inner, seen), {"type": "null"}]}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type) or _is_typeddict(tp):
        if tp in seen:
            raise _Unsupported(f"`{tp.__name__}` refers to itself; recursive types are not supported")
        hints = _hints(tp)
        required = sorted(_required_keys(tp, hints))
        props = {k: schema(v, seen + (tp,)) for k, v in hints.items() if _is_field(tp, k)}
        return {"type": "object", "properties": props, "required": [k for k in props if k in required],
                "additionalProperties": False}
    raise _Unsupported(
        f"unsupported type `{_type_name(tp)}`: use str for text, or int, float, bool, list, dict, "
        "a dataclass, a TypedDict, Literal[...] or Any for JSON"
    )


def _no_default(tp, key):
    f = next(f for f in dataclasses.fields(tp) if f.name == key)
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _is_field(tp, key):
    if dataclasses.is_dataclass(tp):
        return any(f.name == key for f in dataclasses.fields(tp) if f.init)
    return True


def _required_keys(tp, hints):
    """Fields the JSON must have: no default and not `Optional` (a missing optional field is None)."""
    if dataclasses.is_dataclass(tp):
        keys = {
            f.name
            for f in dataclasses.fields(tp)
            if f.init
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        }
    else:
        keys = set(getattr(tp, "__required_keys__", hints.keys()))
    return {k for k in keys if not _unwrap_optional(hints[k])[1]}


# ---------------------------------------------------------------------------------------------
# Decoding JSON values into the declared types (with a path for error messages).


class _Shape(Exception):
    pass


def _describe(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    return "an object"


def convert(value, tp, path="value"):
    """Check `value` (parsed JSON) against `tp` and build it (dataclasses constructed)."""
    if tp is typing.Any:
        return value
    if tp is str:
        if isinstance(value, str):
            return value
        raise _Shape(f"{path}: expected a string, got {_describe(value)}")
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise _Shape(f"{path}: expected true or false, got {_describe(value)}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise _Shape(f"{path}: expected an integer, got {_describe(value) if not isinstance(value, float) else value}")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise _Shape(f"{path}: expected a number, got {_describe(value)}")
    if tp is _NoneType:
        if value is None:
            return None
        raise _Shape(f"{path}: expected null, got {_describe(value)}")
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is list or origin is list:
        if not isinstance(value, list):
            raise _Shape(f"{path}: expected an array, got {_describe(value)}")
        if not args:
            return value
        return [convert(v, args[0], f"{path}[{i}]") for i, v in enumerate(value)]
    if tp is dict or origin is dict:
        if not isinstance(value, dict):
            raise _Shape(f"{path}: expected an object, got {_describe(value)}")
        if not args:
            return value
        return {k: convert(v, args[1], f"{path}.{k}") for k, v in value.items()}
    if origin is typing.Literal:
        for a in args:
            if value == a and type(value) is type(a):
                return value
        raise _Shape(f"{path}: expected one of {json.dumps(list(args))}, got {json.dumps(value)}")
    inner, optional = _unwrap_optional(tp)
    if optional:
        return None if value is None else convert(value, inner, path)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type) or _is_typeddict(tp):
        if not isinstance(value, dict):
            raise _Shape(f"{path}: expected an object ({tp.__name__}), got {_describe(value)}")
        hints = _hints(tp)
        fields = {k: v for k, v in hints.items() if _is_field(tp, k)}
        unknown = [k for k in value if k not in fields]
        if unknown:
            raise _Shape(
                f"{path}: unknown field `{unknown[0]}`; expected fields: {', '.join(fields) or 'none'}"
            )
        required = _required_keys(tp, hints)
        kwargs = {}
        for k, ftp in fields.items():
            if k in value:
                kwargs[k] = convert(value[k], ftp, f"{path}.{k}")
            elif k in required:
                raise _Shape(f"{path}: missing field `{k}`")
            elif dataclasses.is_dataclass(tp) and _unwrap_optional(ftp)[1] and _no_default(tp, k):
                kwargs[k] = None
        return tp(**kwargs)
    raise _Shape(f"{path}: cannot decode into `{_type_name(tp)}`")


# ---------------------------------------------------------------------------------------------
# Docstrings: first paragraph → description; an `Args:` section → param descriptions.

_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Returns|Return|Raises|Yields|Examples?|Notes?|See Also)\s*:\s*$")
_ARG_LINE = re.compile(r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


def parse_docstring(doc):
    """(description, {param: (description, line_offset)}, [(bad line text, offset)]).

    Offsets count lines from the docstring's first line, so errors can point at the file."""
    if not doc:
        return "", {}, []
    lines = doc.expandtabs().split("\n")
    # Indentation of the body (lines after the first), as inspect.cleandoc measures it.
    indents = [len(l) - len(l.lstrip()) for l in lines[1:] if l.strip()]
    margin = min(indents) if indents else 0
    body = [lines[0].strip()] + [l[margin:].rstrip() for l in lines[1:]]
    description = []
    params = {}
    problems = []
    section = None
    current = None
    arg_indent = None
    in_first = True
    for i, line in enumerate(body):
        text = line.strip()
        m = _SECTION.match(text)
        if m and (len(line) - len(line.lstrip())) == 0:
            section = m.group(1)
            in_first = False
            current = None
            arg_indent = None
            continue
        if section is None:
            if not text:
                if description:
                    in_first = False
                continue
            if in_first:
                description.append(text)
            continue
        if section in ("Args", "Arguments", "Parameters", "Params"):
            if not text:
                continue
            indent = len(line) - len(line.lstrip())
            if indent == 0:
                # A dedented line ends the section (as in Google style).
                section = "other"
                continue
            if arg_indent is None:
                arg_indent = indent
            if indent == arg_indent:
                am = _ARG_LINE.match(text)
                if not am:
                    problems.append((text, i))
                    current = None
                    continue
                name = am.group(1)
                params[name] = [am.group(3).strip(), i]
                current = name
            elif current is not None:
                params[current][0] = (params[current][0] + " " + text).strip()
    return " ".join(description), {k: (v[0], v[1]) for k, v in params.items()}, problems


# ---------------------------------------------------------------------------------------------
# Deriving a tool's manifest entry.


_NO_DEFAULT = object()


def _manifest_default(param, file, line, errors):
    """The default as the manifest shows it (the schema's `default`): a JSON value of the
    param's type; `None` and values JSON cannot hold are not shown."""
    value = param.default
    if value is None:
        return _NO_DEFAULT
    try:
        shown = json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return _NO_DEFAULT
    if not param.json:
        if not isinstance(value, str):
            errors.append(Misuse(file, line, f"parameter `{param.name}` is text (`str`), so its default must be a "
                                             f"str, got {value!r}"))
            return _NO_DEFAULT
        return shown
    try:
        convert(shown, param.annotation, param.name)
    except _Shape as e:
        errors.append(Misuse(file, line, f"the default of parameter `{param.name}` does not fit its type: {e}"))
        return _NO_DEFAULT
    return shown


class Param:
    __slots__ = ("name", "annotation", "json", "optional", "default", "schema", "description",
                 "manifest_default")

    def __init__(self, name, annotation, is_json, optional, default, schema, description):
        self.name = name
        self.annotation = annotation
        self.json = is_json
        self.optional = optional
        self.default = default
        self.schema = schema
        self.description = description
        self.manifest_default = _NO_DEFAULT


class ToolSpec:
    """A tool as derived from its function: the manifest entry and what dispatch needs."""

    __slots__ = ("name", "func", "params", "manifest", "text_only")

    def __init__(self, name, func, params, manifest):
        self.name = name
        self.func = func
        self.params = params
        self.manifest = manifest
        # Every param is plain text: a call with one argument per param passes them as they are.
        self.text_only = not any(p.json for p in params)


def _flag(decl, key, errors):
    v = decl.options.get(key, False)
    if not isinstance(v, bool):
        errors.append(Misuse(decl.file, decl.line, f"`{key}` is a flag: write `{key}=True` or leave it out"))
        return False
    return v


def derive(decl):
    """The ToolSpec of one `@tool` declaration, or raise a list of Misuse."""
    errors = []
    func = decl.func
    file, line = decl.file, decl.line
    node = _def_node(func) if hasattr(func, "__code__") else None
    def_line = node.lineno if node else line

    if not inspect.isfunction(func):
        raise _Errors([Misuse(file, line, "`@tool` goes on a plain function defined with `def`")])
    if inspect.iscoroutinefunction(func) or inspect.isgeneratorfunction(func):
        errors.append(Misuse(file, def_line, "tools are synchronous functions that return their output: "
                                              "remove `async` / `yield`"))
    for key in decl.options:
        if key not in _TOOL_OPTIONS:
            errors.append(Misuse(file, line, f"unknown tool option `{key}`; expected one of: "
                                             + ", ".join(_TOOL_OPTIONS)))
    name = decl.options.get("name", func.__name__)
    if not isinstance(name, str) or not _IDENT.match(name) or len(name) > MAX_NAME:
        errors.append(Misuse(file, line, f"tool name {quoted(name)} must match [A-Za-z_][A-Za-z0-9_]* "
                                         f"(at most {MAX_NAME} chars)"))
    danger = _flag(decl, "danger", errors)
    read_only = _flag(decl, "read_only", errors)
    rest = _flag(decl, "rest", errors)
    output_limit = decl.options.get("output_limit")
    if output_limit is not None and (isinstance(output_limit, bool) or not isinstance(output_limit, int)
                                     or output_limit < 1):
        errors.append(Misuse(file, line, f"`output_limit` must be a whole number of characters, at least 1, "
                                         f"got {output_limit!r}"))
        output_limit = None
    timeout_ms = decl.options.get("timeout_ms")
    if timeout_ms is not None and (isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int)
                                   or not 1 <= timeout_ms <= MAX_TIMEOUT_MS):
        errors.append(Misuse(file, line, f"`timeout_ms` must be a whole number of milliseconds from 1 to "
                                         f"{MAX_TIMEOUT_MS} (a day), got {timeout_ms!r}"))
        timeout_ms = None
    task_support = decl.options.get("task_support")
    if task_support is not None and task_support not in _TASK_SUPPORT:
        errors.append(Misuse(file, line, f"`task_support` must be one of {', '.join(_TASK_SUPPORT)}, "
                                         f"got {task_support!r}"))
        task_support = None
    category = decl.options.get("category")
    if category is not None and not isinstance(category, str):
        errors.append(Misuse(file, line, f"`category` takes a string, got {category!r}"))
        category = None
    elif category is not None and not category.strip():
        errors.append(Misuse(file, line, "`category` must not be empty"))
    elif category is not None and text_problem(category, MAX_LABEL, False):
        errors.append(Misuse(file, line, f"`category` {text_problem(category, MAX_LABEL, False)}"))

    title = decl.options.get("title")
    if title is not None and not isinstance(title, str):
        errors.append(Misuse(file, line, f"`title` takes a string, got {title!r}"))
        title = None
    elif title is not None and not title.strip():
        errors.append(Misuse(file, line, "`title` must not be empty"))
    elif title is not None and text_problem(title, MAX_TITLE, False):
        errors.append(Misuse(file, line, f"`title` {text_problem(title, MAX_TITLE, False)}"))
    idempotent = _flag(decl, "idempotent", errors)
    icons = decl.options.get("icons", [])
    if isinstance(icons, str) or not isinstance(icons, (list, tuple)) or not all(isinstance(i, str) for i in icons):
        errors.append(Misuse(file, line, f"`icons` takes a list of `data:` URIs, got {icons!r}"))
        icons = []
    elif len(icons) > MAX_ICONS:
        errors.append(Misuse(file, line, f"a tool has at most {MAX_ICONS} icons"))
    else:
        for icon in icons:
            if icon_problem(icon):
                errors.append(Misuse(file, line, f"`icon` {icon_problem(icon)}"))

    doc = func.__doc__ or ""
    description, param_docs, doc_problems = parse_docstring(doc)
    doc_line = None
    if node and node.body and isinstance(node.body[0], ast.Expr) and isinstance(
        getattr(node.body[0], "value", None), ast.Constant
    ):
        doc_line = node.body[0].lineno
    if not description:
        errors.append(Misuse(file, def_line, f"tool `{name}` has no description: write a docstring; its first "
                                             "paragraph is the description the model reads"))
    for text, offset in doc_problems:
        errors.append(Misuse(file, (doc_line or def_line) + offset,
                             f"cannot read this `Args:` line: {text!r}; write `name: description`"))
    problem = text_problem(description, MAX_TOOL_DESCRIPTION, True)
    if problem:
        # At the docstring line that holds the control character, else at its first line.
        bad = next((i for i, l in enumerate(doc.split("\n")) if text_problem(l, len(l), True)), 0)
        errors.append(Misuse(file, (doc_line or def_line) + bad,
                             f"the description of `{func.__name__}` (the docstring's first paragraph) {problem}"))
    for pname, (ptext, offset) in param_docs.items():
        problem = text_problem(ptext, MAX_PARAM_DESCRIPTION, True)
        if problem:
            errors.append(Misuse(file, (doc_line or def_line) + offset,
                                 f"the description of parameter `{pname}` {problem}"))

    sig = inspect.signature(func)
    try:
        hints = typing.get_type_hints(func)
    except Exception as e:
        errors.append(Misuse(file, def_line, f"cannot resolve the type hints of `{func.__name__}`: {e}"))
        hints = {}
    arg_nodes = {}
    if node:
        for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            arg_nodes[a.arg] = a.lineno
        if node.args.vararg:
            arg_nodes[node.args.vararg.arg] = node.args.vararg.lineno
        if node.args.kwarg:
            arg_nodes[node.args.kwarg.arg] = node.args.kwarg.lineno

    output_schema = _output_schema(decl, hints.get("return"), errors)

    params = []
    seen_optional = None
    for p in sig.parameters.values():
        pline = arg_nodes.get(p.name, def_line)
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            star = "*" if p.kind == p.VAR_POSITIONAL else "**"
            errors.append(Misuse(file, pline, f"`{star}{p.name}` is not supported: declare each parameter "
                                              "(use `rest=True` to take the remaining arguments as one str)"))
            continue
        if p.kind == p.KEYWORD_ONLY:
            errors.append(Misuse(file, pline, f"parameter `{p.name}` is keyword-only; tool arguments are "
                                              "positional: remove the `*`"))
            continue
        if not _IDENT.match(p.name) or len(p.name) > MAX_NAME:
            errors.append(Misuse(file, pline, f"parameter name {quoted(p.name)} must match [A-Za-z_][A-Za-z0-9_]* "
                                              f"(at most {MAX_NAME} chars)"))
            continue
        if p.name not in hints:
            errors.append(Misuse(file, pline, f"parameter `{p.name}` needs a type hint: `str` for text, "
                                              "or int, float, bool, list, dict, a dataclass for JSON"))
            continue
        tp = hints[p.name]
        has_default = p.default is not inspect.Parameter.empty
        try:
            inner, is_opt = _unwrap_optional(tp)
            if inner is str:
                is_json, sch = False, "string"
            else:
                is_json = True
                s = schema(inner)
                sch = s["type"] if list(s) == ["type"] else s
        except _Unsupported as e:
            errors.append(Misuse(file, pline, f"parameter `{p.name}`: {e}"))
            continue
        if isinstance(sch, dict) and schema_problem(sch):
            errors.append(Misuse(file, pline, f"parameter `{p.name}`: its JSON Schema {schema_problem(sch)}"))
            continue
        optional = is_opt or has_default
        if optional:
            seen_optional = seen_optional or p.name
        elif seen_optional:
            errors.append(Misuse(file, pline, f"required parameter `{p.name}` cannot follow the optional "
                                              f"parameter `{seen_optional}`: optional parameters go last "
                                              "(the model leaves them off the end)"))
        desc = param_docs.get(p.name, ("", 0))[0]
        default = p.default if has_default else None
        param = Param(p.name, inner, is_json, optional, default, sch, desc)
        param.manifest_default = _manifest_default(param, file, pline, errors)
        params.append(param)

    for doc_name, (_, offset) in param_docs.items():
        if doc_name not in sig.parameters:
            errors.append(Misuse(file, (doc_line or def_line) + offset,
                                 f"the docstring describes a parameter `{doc_name}` that `{func.__name__}` "
                                 "does not have"))

    if rest:
        if not sig.parameters:
            errors.append(Misuse(file, line, "`rest` needs at least one parameter: the last one takes the "
                                             "remaining arguments"))
        elif params and len(params) == len(sig.parameters):
            last = params[-1]
            if last.json or last.optional:
                errors.append(Misuse(file, arg_nodes.get(last.name, def_line),
                                     f"with `rest`, the last parameter must be a required `str` (`{last.name}` "
                                     "is not): it receives the remaining arguments joined with `,`"))
    if errors:
        raise _Errors(errors)

    entry = {
        "name": name,
        "description": description,
        "params": [_param_entry(p) for p in params],
        "argCount": len(params),
        "parseJson": [p.json for p in params],
        "rest": rest,
    }
    if output_limit is not None:
        entry["outputLimit"] = output_limit
    entry["danger"] = danger
    entry["readOnly"] = read_only
    if category is not None:
        entry["category"] = category
    if output_schema is not None:
        entry["outputSchema"] = output_schema
    if timeout_ms is not None:
        entry["timeoutMs"] = timeout_ms
    if task_support is not None:
        entry["taskSupport"] = task_support
    if title is not None:
        entry["title"] = title
    if idempotent:
        entry["idempotent"] = True
    if icons:
        entry["icons"] = [{"src": i} for i in icons]
    return ToolSpec(name, func, params, entry)


def _param_entry(p):
    entry = {"name": p.name, "type": p.schema, "description": p.description, "optional": p.optional}
    if p.manifest_default is not _NO_DEFAULT:
        entry["default"] = p.manifest_default
    return entry


def _is_record(tp):
    return isinstance(tp, type) and (dataclasses.is_dataclass(tp) or _is_typeddict(tp))


def _output_schema(decl, returns, errors):
    """The tool's outputSchema: the `output_schema` option (a dataclass, a TypedDict or a JSON
    Schema dict for an object), else derived from a dataclass or TypedDict return annotation."""
    file, line = decl.file, decl.line
    out = _output_schema_of(decl, returns, errors)
    if out is not None and schema_problem(out):
        errors.append(Misuse(file, line, f"the output schema {schema_problem(out)}"))
        return None
    return out


def _output_schema_of(decl, returns, errors):
    file, line = decl.file, decl.line
    given = decl.options.get("output_schema", returns if _is_record(returns) else None)
    if given is None:
        return None
    if _is_record(given):
        try:
            return schema(given)
        except _Unsupported as e:
            errors.append(Misuse(file, line, f"output schema: {e}"))
            return None
    if isinstance(given, dict):
        if given.get("type") != "object":
            errors.append(Misuse(file, line, "`output_schema` must describe an object (`\"type\": \"object\"`): "
                                             "a structured result is a JSON object"))
            return None
        try:
            json.dumps(given)
        except (TypeError, ValueError) as e:
            errors.append(Misuse(file, line, f"`output_schema` is not JSON: {e}"))
            return None
        return given
    errors.append(Misuse(file, line, f"`output_schema` takes a dataclass, a TypedDict or a JSON Schema dict, "
                                     f"got {given!r}"))
    return None


class _Errors(Exception):
    def __init__(self, errors):
        super().__init__(errors)
        self.errors = errors


def derive_all():
    """Every registered tool's spec (in declaration order), or raise _Errors with all misuses."""
    errors = []
    specs = []
    names = {}
    for decl in _tools:
        try:
            spec = decl.spec or derive(decl)
        except _Errors as e:
            errors.extend(e.errors)
            continue
        if spec.name in names:
            first = names[spec.name]
            errors.append(Misuse(decl.file, decl.line, f"tool `{spec.name}` is defined twice in this plugin "
                                                       f"(first at {_shown_path(first.file)}:{first.line}); "
                                                       "rename one with `@tool(name=...)`"))
            continue
        names[spec.name] = decl
        decl.spec = spec
        specs.append(spec)
    if errors:
        raise _Errors(errors)
    return specs


# ---------------------------------------------------------------------------------------------
# Calls: arguments in, result out.


def decode_args(spec, args):
    """Positional values for `spec.func` from the host's string arguments, or raise ToolError."""
    if spec.text_only and len(args) == len(spec.params):
        return args
    if len(args) > len(spec.params):
        raise ToolError(f"{spec.name}: takes at most {len(spec.params)} arguments but got {len(args)}")
    values = []
    for i, p in enumerate(spec.params):
        if i >= len(args):
            if p.optional:
                values.append(p.default)
                continue
            raise ToolError(f"{spec.name}: argument {i + 1} (`{p.name}`) is missing")
        raw = args[i]
        if not p.json:
            values.append(raw)
            continue
        try:
            parsed = json.loads(raw)
        except ValueError as e:
            raise ToolError(f"{spec.name}: argument `{p.name}` is not valid JSON: {e}") from None
        if parsed is None and p.optional:
            values.append(p.default)
            continue
        try:
            values.append(convert(parsed, p.annotation, p.name))
        except _Shape as e:
            raise ToolError(f"{spec.name}: argument `{p.name}` does not have the expected shape: {e}") from None
    return values


def _jsonable(v):
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return dataclasses.asdict(v)
    raise TypeError(f"{type(v).__name__} is not JSON serializable")


# Built once: `json.dumps` with any non-default option builds a new encoder on every call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=_jsonable)


def encode_result(spec, value):
    """A tool's return value as the output text: str as is, None → "ok", JSON otherwise."""
    if isinstance(value, str):
        return value
    if value is None:
        return "ok"
    if isinstance(value, (dict, list, int, float, bool)) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    ):
        try:
            return _ENCODER.encode(value)
        except (TypeError, ValueError) as e:
            raise ToolError(f"{spec.name}: the result cannot be written as JSON: {e}") from None
    raise ToolError(
        f"{spec.name}: returned a `{type(value).__name__}`; a tool returns str, dict, list, a dataclass or None"
    )
