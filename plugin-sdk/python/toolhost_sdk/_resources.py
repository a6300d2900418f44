"""Resources: the `resource` and `resource_template` decorators record what the author wrote;
`derive_all` holds each to the host's rules (host/spec/src/resources.rs: `check` and
`Template::parse`) and builds the manifest's `resources` and `resourceTemplates`; `contents`
checks what a read returned. The dispatch of the `resources.read` export is in `_guest`.

Every misuse becomes a `Misuse` at the author's decorator, parameter or docstring line.
"""

import ast
import inspect
import re
import typing

from ._spec import (MAX_TITLE, Misuse, ToolError, _caller, _def_node, _Errors, _is_control, _shown_path,
                    parse_docstring, quoted, text_problem)

# The host's caps (host/spec/src/resources.rs).
MAX_RESOURCES = 64
MAX_TEMPLATES = 16
MAX_URI = 1024  # bytes, a URI or a template
MAX_RESOURCE_NAME = 128
MAX_RESOURCE_DESCRIPTION = 1024
MAX_MIME = 127  # bytes
MAX_EXPRESSIONS = 8
MAX_SIZE = 2**64 - 1
# `skill:` is the host's own: a plugin's skills.
RESERVED_SCHEMES = ("skill",)

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*\Z")
_VARIABLE = re.compile(r"[A-Za-z0-9_]+\Z")

# What the decorators recorded, in declaration order. `_project.load` clears it per project.
_resources = []

_OPTIONS = {False: ("name", "title", "description", "mime_type", "size"),
            True: ("name", "title", "description", "mime_type")}


# ---------------------------------------------------------------------------------------------
# The host's rules for URIs and templates.


def scheme(uri):
    """The scheme of an absolute URI (`docs` of `docs://a`), or None."""
    head, sep, _ = uri.partition(":")
    return head if sep and _SCHEME.match(head) else None


def template_variables(template):
    """The variables of a URI template (`{name}`, `{+name}`), in order; a ValueError says what
    is wrong with it, in the host's words."""
    parts = []  # ("literal", text) or ("var", name)
    rest = template
    while rest:
        i = next((k for k, c in enumerate(rest) if c in "{}"), None)
        if i is None:
            parts.append(("literal", rest))
            break
        if rest[i] == "}":
            raise ValueError("has a `}` without its `{`")
        if i > 0:
            parts.append(("literal", rest[:i]))
        close = rest.find("}", i)
        if close < 0:
            raise ValueError("has a `{` without its `}`")
        inner = rest[i + 1:close]
        name = inner[1:] if inner.startswith("+") else inner
        if not _VARIABLE.match(name):
            raise ValueError(f"has `{{{inner}}}`: toolhost serves `{{name}}` and `{{+name}}` expressions, "
                             "a name of letters, digits and `_`")
        if parts and parts[-1][0] == "var":
            raise ValueError(f"has two expressions in a row before `{{{inner}}}`: put text between them")
        if ("var", name) in parts:
            raise ValueError(f"uses the variable `{name}` twice")
        parts.append(("var", name))
        rest = rest[close + 1:]
    names = [p[1] for p in parts if p[0] == "var"]
    if not names:
        raise ValueError("has no `{name}` expression: a URI without variables is a static resource "
                         "(`@resource`)")
    if len(names) > MAX_EXPRESSIONS:
        raise ValueError(f"has {len(names)} expressions; at most {MAX_EXPRESSIONS} are allowed")
    if parts[0][0] != "literal" or scheme(parts[0][1]) is None:
        raise ValueError("must begin with its scheme (`file:///{+path}`, not `{+uri}`)")
    return names


def uri_problem(uri, template):
    """Why `uri` cannot be declared (a template when `template`), or None."""
    n = len(uri.encode("utf-8"))
    if n > MAX_URI:
        return f"is {n} bytes; at most {MAX_URI} are allowed"
    bad = next((c for c in uri if c.isspace() or _is_control(c)), None)
    if bad is not None:
        return f"holds {bad!r}: a URI has no whitespace or control characters"
    s = scheme(uri)
    if s is None:
        return "is not an absolute URI (`scheme:…`, e.g. `docs://guide`)"
    if s.lower() in RESERVED_SCHEMES:
        return f"uses the `{s}:` scheme, which is the host's own (a plugin's skills)"
    if not template and ("{" in uri or "}" in uri):
        return "has `{` or `}`: a URI with variables is a resource template (`@resource_template`)"
    if template:
        try:
            template_variables(uri)
        except ValueError as e:
            return str(e)
    return None


def mime_problem(mime):
    """Why `mime` is not a MIME type the host takes (`type/subtype`, printable ASCII), or None."""
    kind, sep, sub = mime.partition("/")
    if len(mime.encode("utf-8")) <= MAX_MIME and sep and kind and sub and all(" " <= c <= "~" for c in mime):
        return None
    return f"{quoted(mime)} is not a MIME type (`type/subtype`, e.g. \"text/markdown\")"


# ---------------------------------------------------------------------------------------------
# The decorators.


class _ResourceDecl:
    __slots__ = ("func", "uri", "options", "template", "file", "line")

    def __init__(self, func, uri, options, template, file, line):
        self.func = func
        self.uri = uri
        self.options = options
        self.template = template
        self.file = file
        self.line = line


def resource(uri=None, **options):
    """Make a module-level function a resource of this plugin, read by its URI.

    `@resource("docs://style-guide", mime_type="text/markdown")` on a function without
    parameters. Options: `name` (default: the function's name), `title`, `description`
    (default: the docstring's first paragraph), `mime_type`, `size` (bytes, when known). The
    function returns `str` (text) or `bytes` (a blob); an exception is the read's error. It is
    returned unchanged, so tests call it directly.
    """
    file, line = _caller()
    return _register(uri, options, False, file, line)


def resource_template(uri_template=None, **options):
    """Make a module-level function serve every URI a template matches (RFC 6570: `{name}` one
    path segment, `{+name}` any text).

    `@resource_template("file:///{+path}")` on a function whose parameters are the template's
    variables (`def workspace_file(path: str)`); the host passes the matched values,
    percent-decoded. Options as `resource`, without `size`.
    """
    file, line = _caller()
    return _register(uri_template, options, True, file, line)


def _register(uri, options, template, file, line):
    if callable(uri):
        name = "resource_template" if template else "resource"
        example = "file:///{+path}" if template else "docs://guide"
        raise Misuse(file, line, f"`@{name}` needs its URI: `@{name}(\"{example}\")`")

    def register(f):
        _resources.append(_ResourceDecl(f, uri, options, template, file, line))
        return f

    return register


# ---------------------------------------------------------------------------------------------
# Deriving the manifest entries.


class ResourceSpec:
    """A resource or template as derived from its function: the manifest entry and what a read
    needs (`variables`: the template's, in order; empty for a static resource)."""

    __slots__ = ("uri", "template", "name", "func", "variables", "manifest", "decl")

    def __init__(self, decl, name, variables, manifest):
        self.uri = decl.uri
        self.template = decl.template
        self.name = name
        self.func = decl.func
        self.variables = variables
        self.manifest = manifest
        self.decl = decl


def _text_option(decl, key, errors, limit, description=False):
    """The option `key` (a str or None), held to the host's rules for a resource's texts."""
    value = decl.options.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        errors.append(Misuse(decl.file, decl.line, f"`{key}` takes a string, got {value!r}"))
        return None
    if not description and not value.strip():
        errors.append(Misuse(decl.file, decl.line, f"`{key}` must not be blank when given"))
        return None
    problem = text_problem(value, limit, description)
    if problem:
        errors.append(Misuse(decl.file, decl.line, f"`{key}` {problem}"))
        return None
    return value


def _description(decl, node, errors):
    """The `description` option, else the docstring's first paragraph (at its line if too long)."""
    if "description" in decl.options:
        return _text_option(decl, "description", errors, MAX_RESOURCE_DESCRIPTION, True) or ""
    description = parse_docstring(decl.func.__doc__ or "")[0]
    problem = text_problem(description, MAX_RESOURCE_DESCRIPTION, True)
    if problem:
        line = node.body[0].lineno if node and node.body and isinstance(node.body[0], ast.Expr) else decl.line
        errors.append(Misuse(decl.file, line, f"the description of `{decl.func.__name__}` (the docstring's "
                                              f"first paragraph) {problem}"))
        return ""
    return description


def _options(decl, errors):
    """name, title, mime_type and size from the decorator (name defaults to the function's)."""
    for key in decl.options:
        if key not in _OPTIONS[decl.template]:
            errors.append(Misuse(decl.file, decl.line, f"unknown resource option `{key}`; expected one of: "
                                                       + ", ".join(_OPTIONS[decl.template])))
    name = decl.options.get("name", decl.func.__name__)
    if not isinstance(name, str) or not name.strip():
        errors.append(Misuse(decl.file, decl.line, f"`name` must be a non-blank string, got {name!r}"))
        name = None
    elif text_problem(name, MAX_RESOURCE_NAME, False):
        errors.append(Misuse(decl.file, decl.line, f"`name` {text_problem(name, MAX_RESOURCE_NAME, False)}"))
        name = None
    title = _text_option(decl, "title", errors, MAX_TITLE)
    mime = decl.options.get("mime_type")
    if mime is not None and (not isinstance(mime, str) or mime_problem(mime)):
        problem = mime_problem(mime) if isinstance(mime, str) else f"{mime!r} is not a string"
        errors.append(Misuse(decl.file, decl.line, f"`mime_type` {problem}"))
        mime = None
    size = decl.options.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_SIZE):
        errors.append(Misuse(decl.file, decl.line, f"`size` must be a whole number of bytes, at least 0, "
                                                   f"got {size!r}"))
        size = None
    return name, title, mime, size


def _parameters(decl, node, variables, errors):
    """Check the function's parameters against the template's variables (none for a static
    resource): each parameter a variable, each variable a parameter, text (`str`) each."""
    func = decl.func
    def_line = node.lineno if node else decl.line
    lines = {}
    if node:
        for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            lines[a.arg] = a.lineno
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # an unresolvable hint: left to Python at the call
        hints = {}
    params = inspect.signature(func).parameters.values()
    for p in params:
        at = lines.get(p.name, def_line)
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            star = "*" if p.kind == p.VAR_POSITIONAL else "**"
            errors.append(Misuse(decl.file, at, f"`{star}{p.name}` is not supported: name each parameter as a "
                                                "variable of the template"))
        elif not decl.template:
            errors.append(Misuse(decl.file, at, f"a static resource's function takes no parameters (`{p.name}`); "
                                                "a URI with `{variables}` is a `@resource_template`"))
        elif p.name not in variables:
            errors.append(Misuse(decl.file, at, f"`{p.name}` is no variable of {quoted(decl.uri)} (its variables: "
                                                f"{', '.join(variables)})"))
        elif p.name in hints and hints[p.name] is not str:
            errors.append(Misuse(decl.file, at, f"parameter `{p.name}` is a template variable, so text: annotate "
                                                "it `str` or leave the hint out"))
    names = {p.name for p in params}
    for v in variables:
        if v not in names:
            errors.append(Misuse(decl.file, def_line, f"the template's variable `{v}` needs a parameter "
                                                      f"`{v}: str` of `{func.__name__}`"))


def derive(decl):
    """The ResourceSpec of one `@resource` or `@resource_template`, or raise _Errors."""
    what = "@resource_template" if decl.template else "@resource"
    if not inspect.isfunction(decl.func):
        raise _Errors([Misuse(decl.file, decl.line, f"`{what}` goes on a plain function defined with `def`")])
    errors = []
    node = _def_node(decl.func)
    if inspect.iscoroutinefunction(decl.func) or inspect.isgeneratorfunction(decl.func):
        errors.append(Misuse(decl.file, node.lineno if node else decl.line,
                             "a resource's function is synchronous and returns its contents: remove `async` / "
                             "`yield`"))
    kind = "template" if decl.template else "URI"
    variables = []
    if not isinstance(decl.uri, str):
        errors.append(Misuse(decl.file, decl.line, f"the resource {kind} must be a string, got {decl.uri!r}"))
    elif uri_problem(decl.uri, decl.template):
        errors.append(Misuse(decl.file, decl.line, f"resource {kind} {quoted(decl.uri)} "
                                                   f"{uri_problem(decl.uri, decl.template)}"))
    elif decl.template:
        variables = template_variables(decl.uri)
    name, title, mime, size = _options(decl, errors)
    description = _description(decl, node, errors)
    if isinstance(decl.uri, str) and not (decl.template and not variables):
        _parameters(decl, node, variables, errors)
    if errors:
        raise _Errors(errors)
    entry = {"uriTemplate" if decl.template else "uri": decl.uri, "name": name}
    if title is not None:
        entry["title"] = title
    if description:
        entry["description"] = description
    if mime is not None:
        entry["mimeType"] = mime
    if size is not None:
        entry["size"] = size
    return ResourceSpec(decl, name, variables, entry)


def _first(decl):
    return f"first at {_shown_path(decl.file)}:{decl.line}"


def derive_all():
    """(statics, templates): every declared resource's spec, in declaration order; or raise
    _Errors with every misuse, each URI, template and name declared once, within the caps."""
    errors = []
    statics, templates = [], []
    uris, names = {}, {}
    full = set()  # the kinds whose cap was passed (reported once)
    for decl in _resources:
        try:
            spec = derive(decl)
        except _Errors as e:
            errors.extend(e.errors)
            continue
        mine = templates if decl.template else statics
        cap = MAX_TEMPLATES if decl.template else MAX_RESOURCES
        kind = "resource template" if decl.template else "resource"
        if len(mine) == cap:
            if kind not in full:
                errors.append(Misuse(decl.file, decl.line, f"this plugin declares more than {cap} {kind}s; "
                                                           f"the host allows at most {cap}"))
            full.add(kind)
        elif spec.uri in uris:
            errors.append(Misuse(decl.file, decl.line, f"{kind} {quoted(spec.uri)} is declared twice "
                                                       f"({_first(uris[spec.uri])})"))
        elif spec.name in names:
            errors.append(Misuse(decl.file, decl.line, f"the name {quoted(spec.name)} names two resources "
                                                       f"({_first(names[spec.name])}); give one another "
                                                       "with `name=...`"))
        else:
            uris[spec.uri] = names[spec.name] = decl
            mine.append(spec)
    if errors:
        raise _Errors(errors)
    return statics, templates


# ---------------------------------------------------------------------------------------------
# Reads.


def contents(spec, uri, value):
    """A read's result: `str` is text, `bytes` (or `bytearray`, `memoryview`) a blob."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise ToolError(f"{uri}: `{spec.func.__name__}` returned a `{type(value).__name__}`; a resource returns "
                    "str (text) or bytes")
