"""A plugin project on disk: `pyproject.toml` (`[project]` name/version/description,
`[tool.toolhost] module`) and the module that defines the tools, resources and prompts.
`manifest(dir)` imports the module under plain CPython and builds the manifest JSON the host
validates."""

import ast
import os
import re
import sys
import tomllib
import traceback
import types

from . import _prompts, _resources, _spec
from ._spec import Misuse, _Errors

DEFAULT_MODULE = "app"
_TOOLHOST_KEYS = ("module",)
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Module names the component already uses: the world (`plugin`), componentize-py's generated
# bindings and runtime, and the SDK's own entry module.
_RESERVED = ("plugin", "wit_world", "componentize_py_types", "componentize_py_runtime",
             "componentize_py_async_support", "poll_loop", "toolhost_entry", "toolhost_sdk")


def _line_of(text, table, key):
    """Line (1-based) of `key = …` inside `[table]` in TOML text, else the table's line, else 1."""
    current = None
    table_line = 1
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith("["):
            current = s.strip("[]").strip()
            if current == table:
                table_line = i
            continue
        if current == table and re.match(rf"{re.escape(key)}\s*=", s):
            return i
    return table_line


class Project:
    """What a project directory says about itself before its code is imported."""

    def __init__(self, root):
        self.root = os.path.normpath(root)
        self.pyproject = os.path.join(self.root, "pyproject.toml")
        self.module = DEFAULT_MODULE
        self.meta = {}  # name, version, description from [project], with their lines
        self.text = ""
        errors = []
        if not os.path.isdir(self.root):
            raise _Errors([Misuse(self.root, 1, "not a directory: give the plugin project's folder")])
        if os.path.exists(self.pyproject):
            with open(self.pyproject, encoding="utf-8") as f:
                self.text = f.read()
            try:
                data = tomllib.loads(self.text)
            except tomllib.TOMLDecodeError as e:
                m = re.search(r"line (\d+)", str(e))
                raise _Errors([Misuse(self.pyproject, int(m.group(1)) if m else 1, f"not valid TOML: {e}")])
            project = data.get("project", {})
            for key in ("name", "version", "description"):
                if key in project:
                    self.meta[key] = (project[key], _line_of(self.text, "project", key))
            th = data.get("tool", {}).get("toolhost", {})
            for key in th:
                if key not in _TOOLHOST_KEYS:
                    errors.append(Misuse(self.pyproject, _line_of(self.text, "tool.toolhost", key),
                                         f"unknown key `{key}` in [tool.toolhost]; expected: "
                                         + ", ".join(_TOOLHOST_KEYS)))
            if "module" in th:
                self.module = th["module"]
                if not isinstance(self.module, str) or not _MODULE.match(self.module):
                    errors.append(Misuse(self.pyproject, _line_of(self.text, "tool.toolhost", "module"),
                                         f"`module` must be a module name such as \"app\" (a file app.py "
                                         f"beside pyproject.toml), got {self.module!r}"))
                elif self.module in _RESERVED:
                    errors.append(Misuse(self.pyproject, _line_of(self.text, "tool.toolhost", "module"),
                                         f"the module name `{self.module}` is taken inside the component "
                                         f"({', '.join(_RESERVED)}); rename the file, e.g. to app.py"))
        if errors:
            raise _Errors(errors)
        self.module_file = os.path.join(self.root, self.module + ".py")
        if not os.path.isfile(self.module_file):
            package = os.path.join(self.root, self.module, "__init__.py")
            if os.path.isfile(package):
                self.module_file = package
            else:
                where = self.pyproject if self.text else self.module_file
                line = _line_of(self.text, "tool.toolhost", "module") if self.text else 1
                raise _Errors([Misuse(where, line, f"the tool module `{self.module}` has no file: expected "
                                                   f"{os.path.join(self.root, self.module + '.py')}")])


# Modules the previous `load` imported (the author's and whatever they imported).
_loaded = set()


def _purge(root):
    """Forget modules loaded from `root` or by the previous load, so a reload reads the files
    as they are now (and a second project's `helper.py` is not the first one's)."""
    for name in _loaded:
        sys.modules.pop(name, None)
    _loaded.clear()
    root = os.path.abspath(root) + os.sep
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if f and os.path.abspath(f).startswith(root):
            del sys.modules[name]


def _import_failure(exc, project):
    """Point an exception raised while importing the author's code at the author's line."""
    if isinstance(exc, Misuse):
        return [exc]
    if isinstance(exc, _Errors):
        return exc.errors
    if isinstance(exc, SyntaxError) and exc.filename:
        return [Misuse(exc.filename, exc.lineno or 1, f"SyntaxError: {exc.msg}")]
    root = os.path.abspath(project.root) + os.sep
    file, line = project.module_file, 1
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        f = frame.f_code.co_filename
        if os.path.abspath(f).startswith(root):
            file, line = f, lineno
    return [Misuse(file, line, f"importing `{project.module}` failed: {type(exc).__name__}: {exc}")]


# The modules the last `load` brought in (the author's and what they import).
last_added = frozenset()


def load(root):
    """Import the project's module with a fresh registry; return (project, module)."""
    global last_added
    project = Project(root)
    _spec._tools.clear()
    _spec._plugins.clear()
    _resources._resources.clear()
    _prompts._prompts.clear()
    _prompts._completions.clear()
    _spec._ast_cache.clear()
    _purge(project.root)
    before = set(sys.modules)
    added = project.root not in sys.path
    if added:
        sys.path.insert(0, project.root)
    try:
        # Compile the source ourselves: a file rewritten within the same second keeps its
        # stale .pyc under the normal import system, and `manifest` must see the code as it is.
        with open(project.module_file, encoding="utf-8") as f:
            source = f.read()
        module = types.ModuleType(project.module)
        module.__file__ = project.module_file
        if project.module_file.endswith("__init__.py"):
            module.__path__ = [os.path.dirname(project.module_file)]
        sys.modules[project.module] = module
        try:
            exec(compile(source, project.module_file, "exec"), module.__dict__)
        except BaseException as e:  # noqa: B036 - the author's import may raise anything
            if isinstance(e, KeyboardInterrupt):
                raise
            del sys.modules[project.module]
            raise _Errors(_import_failure(e, project)) from None
    finally:
        if added and project.root in sys.path:
            sys.path.remove(project.root)
        last_added = frozenset(set(sys.modules) - before)
        _loaded.update(
            name for name in last_added
            if not name.startswith("toolhost_sdk") and _is_local(sys.modules[name], project.root)
        )
    return project, module


def _is_local(module, root):
    """Whether a module came from the project folder (stdlib and site packages stay loaded)."""
    f = getattr(module, "__file__", None)
    return f is not None and os.path.abspath(f).startswith(os.path.abspath(root) + os.sep)


# The modules a component holds before the author's are imported (set by `__main__`; None under
# a test runner, where every loaded module counts).
baseline = None


def _function_imports(path):
    """(line, module, function) of every import inside a function of the file at `path`."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return []
    out = []

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, getattr(child, "name", "<lambda>"))
                continue
            if func is not None and isinstance(child, ast.Import):
                out.extend((child.lineno, a.name, func) for a in child.names)
            elif func is not None and isinstance(child, ast.ImportFrom) and not child.level and child.module:
                out.append((child.lineno, child.module, func))
            visit(child, func)

    visit(tree, None)
    return out


def _late_imports(project, added):
    """An import inside a function runs when a tool is called. A component holds only the
    modules imported while it was built (componentize-py snapshots them; there are no files at
    run time), so each such import must name a module the plugin's modules import at load."""
    held = set(sys.modules) if baseline is None else set(baseline) | set(added)
    files = [project.module_file] + sorted(
        m.__file__ for name, m in sys.modules.items() if name in added and _is_local(m, project.root)
        and m.__file__ != project.module_file
    )
    errors = []
    for path in dict.fromkeys(files):
        for line, module, func in _function_imports(path):
            if module in held or module.split(".")[0] == "toolhost_sdk":
                continue
            errors.append(Misuse(path, line, f"`{module}` is imported inside `{func}`, so only when the tool "
                                             "runs, and the component holds only the modules imported when "
                                             f"it is built: import `{module}` at the top of the module"))
    return errors


def _list_option(value, key, file, line, errors):
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    errors.append(Misuse(file, line, f"`{key}` takes a string or a list of strings, got {value!r}"))
    return []


_PLUGIN_OPTIONS = ("name", "version", "description", "fs", "env", "net", "secret", "secrets", "exec", "kv")


def _plugin_fields(project):
    """name, version, description and capabilities from `plugin(...)` over `[project]`."""
    errors = []
    fields = {k: (v, project.pyproject, line) for k, (v, line) in project.meta.items()}
    caps = {"fs": [], "env": [], "net": [], "secrets": []}
    exec_ = []
    kv = []
    if len(_spec._plugins) > 1:
        _, file, line = _spec._plugins[1]
        _, f0, l0 = _spec._plugins[0]
        errors.append(Misuse(file, line, f"`plugin(...)` is called twice (first at {_spec._shown_path(f0)}:{l0}); "
                                         "declare the plugin once"))
    for options, file, line in _spec._plugins[:1]:
        for key, value in options.items():
            if key not in _PLUGIN_OPTIONS:
                errors.append(Misuse(file, line, f"unknown plugin option `{key}`; expected one of: "
                                                 + ", ".join(_PLUGIN_OPTIONS)))
            elif key in ("name", "version", "description"):
                fields[key] = (value, file, line)
            elif key == "fs":
                for v in _list_option(value, key, file, line, errors):
                    name, _, mode = v.partition(":")
                    mode = mode or "ro"
                    if not name.strip() or mode not in ("ro", "rw"):
                        errors.append(Misuse(file, line, f"`fs` takes \"NAME:ro\" or \"NAME:rw\", e.g. "
                                                         f"fs=\"workspace:rw\"; got {_spec.quoted(v)}"))
                    else:
                        caps["fs"].append({"path": name, "mode": mode})
            elif key == "kv":
                for v in _list_option(value, key, file, line, errors):
                    problem = _spec.request_problem("kv", v)
                    if problem:
                        errors.append(Misuse(file, line, problem))
                    else:
                        kv.append(v)
            else:
                target = {"secret": "secrets", "exec": None}.get(key, key)
                for v in _list_option(value, key, file, line, errors):
                    problem = _spec.request_problem("secret" if target == "secrets" else key, v)
                    if problem:
                        errors.append(Misuse(file, line, problem))
                    elif target is None:
                        exec_.append(v)
                    else:
                        caps[target].append(v)
    # Only when requested, as the Rust SDK writes it: a plugin that runs nothing loads on hosts
    # that predate `exec`.
    if exec_:
        caps["exec"] = exec_
    # The same for the buckets of the key-value store (`toolhost_sdk.kv`).
    if kv:
        caps["kv"] = kv

    out = {}
    for key in ("name", "version", "description"):
        if key not in fields:
            if key == "description":
                out[key] = ""
                continue
            errors.append(Misuse(project.pyproject if project.text else project.module_file, 1,
                                 f"the plugin has no {key}: set `{key}` in [project] of pyproject.toml "
                                 f"or call plugin({key}=...) in {os.path.basename(project.module_file)}"))
            continue
        value, file, line = fields[key]
        if not isinstance(value, str):
            errors.append(Misuse(file, line, f"plugin `{key}` must be a string, got {value!r}"))
        elif key == "name" and _spec.plugin_name_problem(value):
            errors.append(Misuse(file, line, f"{_spec.plugin_name_problem(value)}; set plugin(name=...) to override"))
        elif key == "version" and not value.strip():
            errors.append(Misuse(file, line, "plugin `version` must not be empty"))
        elif key in ("version", "description"):
            limit = _spec.MAX_LABEL if key == "version" else _spec.MAX_PLUGIN_DESCRIPTION
            problem = _spec.text_problem(value, limit, key == "description")
            if problem:
                errors.append(Misuse(file, line, f"plugin `{key}` {problem}"))
        out[key] = value
    if errors:
        raise _Errors(errors)
    return out, caps


def manifest(root):
    """The manifest (a dict, in the field order the Rust SDK writes) of the project at `root`,
    or raise _Errors listing every misuse."""
    project, _module = load(root)
    errors = []
    fields = caps = None
    try:
        fields, caps = _plugin_fields(project)
    except _Errors as e:
        errors.extend(e.errors)
    specs = []
    try:
        specs = _spec.derive_all()
    except _Errors as e:
        errors.extend(e.errors)
    statics = templates = []
    resources_ok = True
    try:
        statics, templates = _resources.derive_all()
    except _Errors as e:
        errors.extend(e.errors)
        resources_ok = False
    prompts = []
    try:
        # Marks what is completed on the templates' entries (templates unchecked if they failed).
        prompts, _ = _prompts.derive_all(templates if resources_ok else None)
    except _Errors as e:
        errors.extend(e.errors)
    errors.extend(_late_imports(project, last_added))
    if not _spec._tools and not errors:
        errors.append(Misuse(project.module_file, 1, "this plugin declares no tools: mark at least one "
                                                     "function with `@tool`"))
    if errors:
        errors.sort(key=lambda m: (m.file, m.line))
        raise _Errors(errors)
    out = {
        "format": _spec.FORMAT,
        "name": fields["name"],
        "version": fields["version"],
        "description": fields["description"],
        "capabilities": caps,
        "tools": [s.manifest for s in specs],
    }
    # Only when declared, as the Rust SDK writes them.
    if statics:
        out["resources"] = [s.manifest for s in statics]
    if templates:
        out["resourceTemplates"] = [t.manifest for t in templates]
    if prompts:
        out["prompts"] = [p.manifest for p in prompts]
    return out
