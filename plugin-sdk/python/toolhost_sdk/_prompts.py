"""Prompts and completion: the `prompt` and `complete` decorators record what the author wrote;
`derive_all` holds each to the host's rules (host/spec/src/prompts.rs `check`, and a template's
`complete` in host/spec/src/resources.rs) and builds the manifest's `prompts`, marking the
arguments and template variables the plugin completes; `user`, `assistant` and
`resource_link` build a prompt's messages, and `messages`/`values` check what a prompt or a
completion returned. The dispatch of the `prompts.get` and `completion.complete` exports is in
`_guest`.

Every misuse becomes a `Misuse` at the author's decorator, parameter or docstring line.
"""

import ast
import dataclasses
import inspect
import re
import typing

from ._spec import (_IDENT, MAX_NAME, MAX_PARAM_DESCRIPTION, MAX_TITLE, Misuse, ToolError, _caller, _def_node,
                    _Errors, _shown_path, _unwrap_optional, _Unsupported, parse_docstring, quoted, text_problem)

# The host's caps (host/spec/src/prompts.rs).
MAX_PROMPTS = 32
MAX_ARGUMENTS = 16
MAX_PROMPT_NAME = 64
MAX_PROMPT_DESCRIPTION = MAX_PARAM_DESCRIPTION
MAX_ARGUMENT_DESCRIPTION = MAX_PARAM_DESCRIPTION

_PROMPT_NAME = re.compile(r"[A-Za-z0-9_-]+\Z")
# ``- `name`: text`` (or `* `name` — text`): an argument's description, as the Rust SDK reads it.
_BULLET = re.compile(r"^[-*]\s+`([^`]*)`\s*[:\-—]?\s*(.*)$")
_SECTION = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")

_PROMPT_OPTIONS = ("name", "title", "description")
_COMPLETE_OPTIONS = ("prompt", "template", "argument")
ROLES = ("user", "assistant")

# What the decorators recorded, in declaration order. `_project.load` clears both per project.
_prompts = []
_completions = []


def is_prompt_name(name):
    """Whether `name` is a prompt name: `[A-Za-z0-9_-]`, 1 to 64 characters, not starting with `-`."""
    return (isinstance(name, str) and 0 < len(name) <= MAX_PROMPT_NAME and not name.startswith("-")
            and bool(_PROMPT_NAME.match(name)))


# ---------------------------------------------------------------------------------------------
# Messages.


@dataclasses.dataclass(frozen=True)
class ResourceLink:
    """A link to a resource, for the client to read (`resources/read`)."""

    uri: str
    name: str
    description: typing.Optional[str] = None
    mime_type: typing.Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Message:
    """One message of a prompt: `role` is "user" or "assistant"; `content` is its text (`str`)
    or a `ResourceLink`. Build it with `user`, `assistant` or `resource_link`."""

    role: str
    content: typing.Union[str, ResourceLink]


def _text(fn, text):
    if not isinstance(text, str):
        raise TypeError(f"{fn}() takes the message's text, a str, got {type(text).__name__}")
    return text


def user(text):
    """A message the user says: `user(f"Summarise {path}.")`."""
    return Message("user", _text("user", text))


def assistant(text):
    """A message the assistant says (a reply the conversation starts from)."""
    return Message("assistant", _text("assistant", text))


def resource_link(uri, name, description=None, mime_type=None, role="user"):
    """A link to the resource `uri` (named `name`) for the client to read, said by the user
    (or `role="assistant"`): `resource_link(f"file:///{path}", path)`."""
    for key, value in (("uri", uri), ("name", name)):
        if not isinstance(value, str):
            raise TypeError(f"resource_link() takes `{key}` as a str, got {type(value).__name__}")
    for key, value in (("description", description), ("mime_type", mime_type)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"resource_link() takes `{key}` as a str or None, got {type(value).__name__}")
    if role not in ROLES:
        raise ValueError(f"resource_link() takes `role` \"user\" or \"assistant\", got {role!r}")
    return Message(role, ResourceLink(uri, name, description, mime_type))


# ---------------------------------------------------------------------------------------------
# The decorators.


class _PromptDecl:
    __slots__ = ("func", "options", "file", "line")

    def __init__(self, func, options, file, line):
        self.func = func
        self.options = options
        self.file = file
        self.line = line


class _CompleteDecl:
    __slots__ = ("func", "options", "file", "line")

    def __init__(self, func, options, file, line):
        self.func = func
        self.options = options
        self.file = file
        self.line = line


def prompt(name=None, **options):
    """Make a module-level function a prompt of this plugin: a message template a person picks
    (MCP `prompts/get`, a client's slash command).

    `@prompt`, `@prompt("summarise-file")` or `@prompt("summarise-file", title="Summarise a
    file")`. Options: `name` (default: the function's name; `[A-Za-z0-9_-]`), `title`,
    `description` (default: the docstring's first paragraph). The function's parameters are the
    prompt's arguments, text the person types (`str`, or unannotated): without a default it is
    required, with one optional (absent, the parameter keeps its default); ``- `path`: …`` lines
    of the docstring (or an `Args:` section) describe them. It returns `str` (one user message),
    a list of messages (`user`, `assistant`, `resource_link`), or `{"description": …,
    "messages": [...]}`; an exception is the prompt's error. It is returned unchanged, so tests
    call it directly.
    """
    file, line = _caller()
    if callable(name):  # bare `@prompt`
        _prompts.append(_PromptDecl(name, options, file, line))
        return name
    if name is not None:
        options["name"] = name

    def register(f):
        _prompts.append(_PromptDecl(f, options, file, line))
        return f

    return register


def complete(*args, **options):
    """Make a module-level function complete a prompt's argument, or a resource template's
    variable, as a person types it (MCP `completion/complete`).

    `@complete(prompt="summarise-file", argument="path")` or `@complete(template="file:///{+path}",
    argument="path")` (the prompt's or the template's function may stand for its name or
    template) on `def f(value)` or `def f(value, context)`: `value` is what has been
    typed so far, `context` a dict of the other arguments already given. It returns a list of
    str, best first (the host keeps the first 100); an exception is the completion's error. It
    is returned unchanged, so tests call it directly.
    """
    file, line = _caller()
    if args:
        raise Misuse(file, line, "a completion names what it completes: `@complete(prompt=\"NAME\", "
                                 "argument=\"ARG\")` or `@complete(template=\"file:///{+path}\", argument=\"path\")`")

    def register(f):
        _completions.append(_CompleteDecl(f, options, file, line))
        return f

    return register


# ---------------------------------------------------------------------------------------------
# Deriving the manifest entries.


class PromptSpec:
    """A prompt as derived from its function: the manifest entry and what a `get` needs
    (`arguments`: (name, required) in order; `none_default`: optional arguments without a
    default, passed None when absent)."""

    __slots__ = ("name", "func", "arguments", "none_default", "manifest", "decl")

    def __init__(self, decl, name, arguments, none_default, manifest):
        self.name = name
        self.func = decl.func
        self.arguments = arguments
        self.none_default = none_default
        self.manifest = manifest
        self.decl = decl


class CompletionSpec:
    """A completion: what it completes (`kind` "prompt" or "template", `target`, `argument`)
    and whether its function takes the context."""

    __slots__ = ("kind", "target", "argument", "func", "takes_context", "decl")

    def __init__(self, decl, kind, target, argument, takes_context):
        self.kind = kind
        self.target = target
        self.argument = argument
        self.func = decl.func
        self.takes_context = takes_context
        self.decl = decl


def _first(decl):
    return f"first at {_shown_path(decl.file)}:{decl.line}"


def _docstring(doc):
    """(description, {argument: (text, line offset)}, [(bad line, offset)]): the first
    paragraph, and the arguments described by ``- `name`: text`` lines (continued by lines
    indented under them) or an `Args:` section. Offsets count from the docstring's first line."""
    _, section_args, problems = parse_docstring(doc)
    if not doc:
        return "", {}, []
    lines = doc.expandtabs().split("\n")
    indents = [len(l) - len(l.lstrip()) for l in lines[1:] if l.strip()]
    margin = min(indents) if indents else 0
    body = [lines[0].strip()] + [l[margin:].rstrip() for l in lines[1:]]
    description = []
    in_first = True
    args = {}
    current = None  # (name, indent) of the bullet being continued
    for i, line in enumerate(body):
        text = line.strip()
        indent = len(line) - len(line.lstrip())
        m = _BULLET.match(text)
        if m:
            args[m.group(1)] = [m.group(2).strip(), i]
            current = (m.group(1), indent)
            in_first = False
            continue
        if not text:
            if description:
                in_first = False
            current = None
            continue
        if current is not None and indent > current[1]:
            args[current[0]][0] = (args[current[0]][0] + " " + text).strip()
            continue
        current = None
        if indent == 0 and _SECTION.match(text):
            in_first = False
        if in_first:
            description.append(text)
    for name, (text, offset) in section_args.items():
        args.setdefault(name, [text, offset])
    return " ".join(description), {k: (v[0], v[1]) for k, v in args.items()}, problems


def _name(decl, errors):
    name = decl.options.get("name", decl.func.__name__)
    if not is_prompt_name(name):
        shown = quoted(name) if isinstance(name, str) else repr(name)
        hint = "" if "name" in decl.options else "; name it with `@prompt(\"summarise-file\")`"
        errors.append(Misuse(decl.file, decl.line, f"prompt name {shown} must be 1 to {MAX_PROMPT_NAME} of "
                                                   f"[A-Za-z0-9_-], not starting with `-`{hint}"))
        return None
    return name


def _title(decl, errors):
    title = decl.options.get("title")
    if title is None:
        return None
    if not isinstance(title, str):
        errors.append(Misuse(decl.file, decl.line, f"`title` takes a string, got {title!r}"))
        return None
    if not title.strip():
        errors.append(Misuse(decl.file, decl.line, "`title` must not be blank when given"))
        return None
    problem = text_problem(title, MAX_TITLE, False)
    if problem:
        errors.append(Misuse(decl.file, decl.line, f"`title` {problem}"))
        return None
    return title


def derive(decl):
    """The PromptSpec of one `@prompt`, or raise _Errors."""
    if not inspect.isfunction(decl.func):
        raise _Errors([Misuse(decl.file, decl.line, "`@prompt` goes on a plain function defined with `def`")])
    errors = []
    func = decl.func
    node = _def_node(func)
    def_line = node.lineno if node else decl.line
    if inspect.iscoroutinefunction(func) or inspect.isgeneratorfunction(func):
        errors.append(Misuse(decl.file, def_line, "a prompt's function is synchronous and returns its messages: "
                                                  "remove `async` / `yield`"))
    for key in decl.options:
        if key not in _PROMPT_OPTIONS:
            errors.append(Misuse(decl.file, decl.line, f"unknown prompt option `{key}`; expected one of: "
                                                       + ", ".join(_PROMPT_OPTIONS)))
    name = _name(decl, errors)
    title = _title(decl, errors)

    doc = func.__doc__ or ""
    doc_description, arg_docs, doc_problems = _docstring(doc)
    doc_line = def_line
    if node and node.body and isinstance(node.body[0], ast.Expr) and isinstance(
        getattr(node.body[0], "value", None), ast.Constant
    ):
        doc_line = node.body[0].lineno
    for text, offset in doc_problems:
        errors.append(Misuse(decl.file, doc_line + offset, f"cannot read this `Args:` line: {text!r}; write "
                                                           "`name: description`"))
    if "description" in decl.options:
        description = decl.options["description"]
        if not isinstance(description, str):
            errors.append(Misuse(decl.file, decl.line, f"`description` takes a string, got {description!r}"))
            description = ""
        elif text_problem(description, MAX_PROMPT_DESCRIPTION, True):
            errors.append(Misuse(decl.file, decl.line,
                                 f"`description` {text_problem(description, MAX_PROMPT_DESCRIPTION, True)}"))
    else:
        description = doc_description
        problem = text_problem(description, MAX_PROMPT_DESCRIPTION, True)
        if problem:
            errors.append(Misuse(decl.file, doc_line, f"the description of `{func.__name__}` (the docstring's first "
                                                      f"paragraph) {problem}"))

    lines = {}
    if node:
        for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            lines[a.arg] = a.lineno
        for a in (node.args.vararg, node.args.kwarg):
            if a is not None:
                lines[a.arg] = a.lineno
    try:
        hints = typing.get_type_hints(func)
    except Exception as e:
        errors.append(Misuse(decl.file, def_line, f"cannot resolve the type hints of `{func.__name__}`: {e}"))
        hints = {}
    params = list(inspect.signature(func).parameters.values())
    if len(params) > MAX_ARGUMENTS:
        errors.append(Misuse(decl.file, def_line, f"`{func.__name__}` takes {len(params)} arguments; a prompt "
                                                  f"takes at most {MAX_ARGUMENTS}"))
    arguments, entries, none_default = [], [], set()
    for p in params:
        at = lines.get(p.name, def_line)
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            star = "*" if p.kind == p.VAR_POSITIONAL else "**"
            errors.append(Misuse(decl.file, at, f"`{star}{p.name}` is not supported: name each parameter; each is "
                                                "an argument of the prompt"))
            continue
        if p.kind == p.POSITIONAL_ONLY:
            errors.append(Misuse(decl.file, at, f"parameter `{p.name}` is positional-only; a prompt's arguments "
                                                "are passed by name: remove the `/`"))
            continue
        if not _IDENT.match(p.name) or len(p.name) > MAX_NAME:
            errors.append(Misuse(decl.file, at, f"argument name {quoted(p.name)} must match [A-Za-z_][A-Za-z0-9_]* "
                                                f"(at most {MAX_NAME} chars)"))
            continue
        optional_hint = False
        if p.name in hints:
            try:
                inner, optional_hint = _unwrap_optional(hints[p.name])
            except _Unsupported:
                inner = None
            if inner is not str:
                errors.append(Misuse(decl.file, at, f"parameter `{p.name}` is an argument of the prompt, so text: "
                                                    "annotate it `str` (`Optional[str]` if it may be left out) or "
                                                    "leave the hint out"))
                continue
        has_default = p.default is not inspect.Parameter.empty
        required = not has_default and not optional_hint
        if optional_hint and not has_default:
            none_default.add(p.name)
        text = arg_docs.get(p.name, ("", 0))[0]
        problem = text_problem(text, MAX_ARGUMENT_DESCRIPTION, True)
        if problem:
            errors.append(Misuse(decl.file, doc_line + arg_docs[p.name][1],
                                 f"the description of argument `{p.name}` {problem}"))
        entry = {"name": p.name}
        if text:
            entry["description"] = text
        if required:
            entry["required"] = True
        entries.append(entry)
        arguments.append((p.name, required))
    names = {p.name for p in params}
    for doc_name, (_, offset) in arg_docs.items():
        if doc_name not in names:
            errors.append(Misuse(decl.file, doc_line + offset, f"the docstring describes an argument `{doc_name}` "
                                                               f"that `{func.__name__}` does not have"))
    if errors:
        raise _Errors(errors)
    manifest = {"name": name}
    if title is not None:
        manifest["title"] = title
    if description:
        manifest["description"] = description
    if entries:
        manifest["arguments"] = entries
    return PromptSpec(decl, name, arguments, none_default, manifest)


def _derive_completion(decl, prompts, broken, templates):
    """The CompletionSpec of one `@complete`, or raise _Errors. `prompts`: the derived prompts
    by name; `broken`: names of prompts that failed (not checked again); `templates`: the
    derived templates by `uriTemplate`, or None when the resources failed (not checked)."""
    file, line = decl.file, decl.line
    if not inspect.isfunction(decl.func):
        raise _Errors([Misuse(file, line, "`@complete` goes on a plain function defined with `def`")])
    errors = []
    for key in decl.options:
        if key not in _COMPLETE_OPTIONS:
            errors.append(Misuse(file, line, f"unknown completion option `{key}`; expected: prompt or template, "
                                             "and argument"))
    of_prompt, of_template = decl.options.get("prompt"), decl.options.get("template")
    argument = decl.options.get("argument")
    usage = ("a completion names what it completes: `@complete(prompt=\"NAME\", argument=\"ARG\")` or "
             "`@complete(template=\"file:///{+path}\", argument=\"path\")`")
    if (of_prompt is None) == (of_template is None) or argument is None:
        errors.append(Misuse(file, line, usage if of_prompt is None or of_template is None
                             else "name either `prompt` or `template`, not both"))
        raise _Errors(errors)
    kind, target = ("prompt", of_prompt) if of_prompt is not None else ("template", of_template)
    if callable(target):  # the `@prompt` or `@resource_template` function itself
        found = [s for s in (prompts.values() if kind == "prompt" else (templates or {}).values())
                 if s.func is target]
        if found:
            target = found[0].name if kind == "prompt" else found[0].uri
        elif kind == "prompt" and any(d.func is target for d in _prompts) or kind == "template" and templates is None:
            raise _Errors(errors)  # its own error is reported at its decorator
        else:
            what = "`@prompt`" if kind == "prompt" else "`@resource_template`"
            errors.append(Misuse(file, line, f"`{kind}` is the function `{getattr(target, '__name__', target)}`, "
                                             f"which is no {what} of this plugin"))
    for key, value in ((kind, target), ("argument", argument)):
        if not isinstance(value, str) and not (key == kind and callable(value)):
            errors.append(Misuse(file, line, f"`{key}` takes a string, got {value!r}"))
    if errors:
        raise _Errors(errors)

    node = _def_node(decl.func)
    def_line = node.lineno if node else line
    if inspect.iscoroutinefunction(decl.func) or inspect.isgeneratorfunction(decl.func):
        errors.append(Misuse(file, def_line, "a completion's function is synchronous and returns its values: "
                                             "remove `async` / `yield`"))
    params = list(inspect.signature(decl.func).parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) != len(params) or not 1 <= len(positional) <= 2:
        errors.append(Misuse(file, def_line, "a completion's function takes `value` (what has been typed) and, "
                                             "if it wants them, `context` (a dict of the other arguments given)"))

    if kind == "prompt":
        spec = prompts.get(target)
        if spec is None and target not in broken:
            errors.append(Misuse(file, line, f"this plugin has no prompt {quoted(target)} (a prompt is named by "
                                             "`@prompt(\"NAME\")`, or by its function's name)"))
        elif spec is not None and argument not in [a for a, _ in spec.arguments]:
            takes = ", ".join(a for a, _ in spec.arguments) or "none"
            errors.append(Misuse(file, line, f"prompt {quoted(target)} has no argument `{argument}` (its "
                                             f"arguments: {takes})"))
    elif templates is not None:
        spec = templates.get(target)
        if spec is None:
            errors.append(Misuse(file, line, f"this plugin has no resource template {quoted(target)}"))
        elif argument not in spec.variables:
            errors.append(Misuse(file, line, f"{quoted(target)} has no variable `{argument}` (its variables: "
                                             f"{', '.join(spec.variables)})"))
    if errors:
        raise _Errors(errors)
    return CompletionSpec(decl, kind, target, argument, len(positional) == 2)


def derive_all(templates=None):
    """(prompts, completions): every declared prompt's spec in declaration order, and every
    completion by (kind, target, argument); or raise _Errors with every misuse. Marks what is
    completed: `complete` on a prompt's argument, and on a template (`templates`: the derived
    resource templates, or None when they failed, then completions of templates go unchecked
    and unmarked)."""
    errors = []
    specs, by_name, broken = [], {}, set()
    full = False  # the cap was passed (reported once)
    for decl in _prompts:
        try:
            spec = derive(decl)
        except _Errors as e:
            errors.extend(e.errors)
            name = decl.options.get("name", getattr(decl.func, "__name__", None))
            if isinstance(name, str):
                broken.add(name)
            continue
        if len(specs) == MAX_PROMPTS:
            if not full:
                errors.append(Misuse(decl.file, decl.line, f"this plugin declares more than {MAX_PROMPTS} prompts; "
                                                           f"the host allows at most {MAX_PROMPTS}"))
            full = True
            continue
        if spec.name in by_name:
            errors.append(Misuse(decl.file, decl.line, f"the name {quoted(spec.name)} names two prompts "
                                                       f"({_first(by_name[spec.name].decl)}); give one another "
                                                       "with `@prompt(\"NAME\")`"))
            continue
        by_name[spec.name] = spec
        specs.append(spec)
    by_template = None if templates is None else {t.uri: t for t in templates}
    completions = {}
    for decl in _completions:
        try:
            c = _derive_completion(decl, by_name, broken, by_template)
        except _Errors as e:
            errors.extend(e.errors)
            continue
        key = (c.kind, c.target, c.argument)
        if key in completions:
            of = f"prompt {quoted(c.target)}" if c.kind == "prompt" else f"template {quoted(c.target)}"
            errors.append(Misuse(decl.file, decl.line, f"`{c.argument}` of {of} is completed twice "
                                                       f"({_first(completions[key].decl)})"))
            continue
        completions[key] = c
        if c.kind == "prompt" and c.target in by_name:
            for entry in by_name[c.target].manifest.get("arguments", []):
                if entry["name"] == c.argument:
                    entry["complete"] = True
        elif c.kind == "template" and by_template is not None:
            by_template[c.target].manifest.setdefault("complete", []).append(c.argument)
    if errors:
        raise _Errors(errors)
    return specs, completions


# ---------------------------------------------------------------------------------------------
# What a prompt or a completion returned.


def _kind(value):
    return type(value).__name__


def messages(spec, value):
    """(description or None, [Message]) from what a prompt's function returned, or raise
    ToolError: `str` is one user message; a Message, a list (or tuple) of them, or a dict
    {"description": str, "messages": [...]}."""
    where = f"prompt `{spec.name}`: `{spec.func.__name__}`"
    shape = ("a prompt returns str (one user message), a list of messages (user(), assistant(), "
             "resource_link()) or {\"description\": str, \"messages\": [...]}")
    description = None
    if isinstance(value, dict):
        unknown = [k for k in value if k not in ("description", "messages")]
        if unknown or "messages" not in value:
            raise ToolError(f"{where} returned a dict with the keys {sorted(map(str, value))}; {shape}")
        description = value.get("description")
        if description is not None and not isinstance(description, str):
            raise ToolError(f"{where} returned a `{_kind(description)}` description; it is a str")
        value = value["messages"]
    if isinstance(value, str):
        return description, [user(value)]
    if isinstance(value, Message):
        return description, [value]
    if not isinstance(value, (list, tuple)):
        raise ToolError(f"{where} returned a `{_kind(value)}`; {shape}")
    for i, m in enumerate(value):
        if not isinstance(m, Message):
            raise ToolError(f"{where} returned a `{_kind(m)}` as message {i + 1}; build messages with user(), "
                            "assistant() or resource_link()")
    return description, list(value)


def values(spec, value):
    """The list of str a completion's function returned, or raise ToolError."""
    where = f"the completion of `{spec.argument}`: `{spec.func.__name__}`"
    if not isinstance(value, (list, tuple)):
        raise ToolError(f"{where} returned a `{_kind(value)}`; a completion returns a list of str")
    for i, v in enumerate(value):
        if not isinstance(v, str):
            raise ToolError(f"{where} returned a `{_kind(v)}` as value {i + 1}; a completion returns a list of str")
    return list(value)
