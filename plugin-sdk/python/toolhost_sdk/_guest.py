"""The component side: the dispatch behind the `tools.call`, `resources.read`, `prompts.get`
and `completion.complete` exports. The generated entry module (see `__main__.ENTRY`) imports
the author's module, calls `prepare()` while componentize-py pre-initializes the component,
and forwards `Tools.call` to `dispatch`, `Resources.read` to `read`, `Prompts.get` to `get`
(its answer made a WIT `prompt` by `wit_prompt`) and `Completion.complete` to `complete`."""

import sys
import traceback

from . import _prompts, _resources, _spec
from ._spec import ToolError, decode_args, encode_result

_specs = None
# The resources by URI and the templates by their `uriTemplate`, as the host names them.
_statics = None
_templates = None
# The prompts by name; the completions by (kind, target, argument), kind "prompt" or "template".
_prompt_specs = None
_completions = None


def prepare():
    """Derive every tool's, resource's, prompt's and completion's spec now (at build time
    inside the component, once per test run under CPython)."""
    global _specs, _statics, _templates, _prompt_specs, _completions
    _specs = {s.name: s for s in _spec.derive_all()}
    statics, templates = _resources.derive_all()
    _statics = {s.uri: s for s in statics}
    _templates = {s.uri: s for s in templates}
    prompts, _completions = _prompts.derive_all(templates)
    _prompt_specs = {p.name: p for p in prompts}
    return _specs


def dispatch(tool, args):
    """(True, output) or (False, error message) for one call; never raises."""
    specs = _specs if _specs is not None else prepare()
    spec = specs.get(tool)
    if spec is None:
        return False, f"this plugin has no tool named `{tool}`"
    try:
        return True, encode_result(spec, spec.func(*decode_args(spec, args)))
    except Exception as e:
        return False, _failure(e)


def read(uri, template, variables):
    """(True, str or bytes) or (False, error message) for one read of `uri`: a static resource
    when `template` is None, else the template's function with `variables` (name, value pairs)
    as keyword arguments; never raises."""
    if _specs is None:
        prepare()
    spec = _statics.get(uri) if template is None else _templates.get(template)
    if spec is None:
        return False, f"this plugin serves no resource {uri}"
    try:
        given = dict(variables)
        missing = [v for v in spec.variables if v not in given]
        if missing:
            raise ToolError(f"{uri}: the host sent no value for `{missing[0]}` of {spec.uri}")
        value = spec.func(**{v: given[v] for v in spec.variables})
        return True, _resources.contents(spec, uri, value)
    except Exception as e:
        return False, _failure(e)


def get(name, arguments):
    """(True, (description or None, [Message])) or (False, error message) for the prompt
    `name` with `arguments` (name, value pairs) as keyword arguments; never raises."""
    if _specs is None:
        prepare()
    spec = _prompt_specs.get(name)
    if spec is None:
        return False, f"this plugin has no prompt {name}"
    try:
        given = dict(arguments)
        takes = [a for a, _ in spec.arguments]
        unknown = next((a for a in given if a not in takes), None)
        if unknown is not None:
            raise ToolError(f"prompt `{name}` takes no argument `{unknown}` (it takes: {', '.join(takes) or 'none'})")
        missing = [a for a, required in spec.arguments if required and a not in given]
        if missing:
            raise ToolError(f"prompt `{name}` needs its argument{'s' if len(missing) > 1 else ''} "
                            f"`{'`, `'.join(missing)}`")
        kwargs = {a: None for a in spec.none_default}
        kwargs.update(given)
        return True, _prompts.messages(spec, spec.func(**kwargs))
    except Exception as e:
        return False, _failure(e)


def complete(kind, target, argument, value, context):
    """(True, [str]) or (False, error message) for completing `argument` of the prompt (`kind`
    "prompt") or resource template ("template") `target` from `value`, with `context` (name,
    value pairs: the other arguments given); never raises."""
    if _specs is None:
        prepare()
    spec = _completions.get((kind, target, argument))
    if spec is None:
        return False, f"this plugin completes nothing for {argument}"
    try:
        args = (value, dict(context)) if spec.takes_context else (value,)
        return True, _prompts.values(spec, spec.func(*args))
    except Exception as e:
        return False, _failure(e)


def wit_prompt(got, wit):
    """The WIT `prompt` for what `get` answered, built from `wit`: componentize-py's
    `wit_world.exports.prompts` module (passed in: it exists only inside the component)."""
    description, messages = got
    out = []
    for m in messages:
        role = wit.Role.USER if m.role == "user" else wit.Role.ASSISTANT
        c = m.content
        content = (wit.Content_Text(c) if isinstance(c, str) else
                   wit.Content_ResourceLink(wit.ResourceLink(c.uri, c.name, c.description, c.mime_type)))
        out.append(wit.Message(role, content))
    return wit.Prompt(description, out)


def _failure(e):
    """The error message for an exception a tool, a read, a prompt or a completion raised: a
    ToolError's message as it
    is, any other as `TypeName: message` with its traceback on stderr (the host's log)."""
    if isinstance(e, ToolError):
        return str(e) or type(e).__name__
    traceback.print_exc(file=sys.stderr)
    text = str(e)
    text = f"{type(e).__name__}: {text}" if text else type(e).__name__
    if isinstance(e, ModuleNotFoundError):
        text += ("; a component holds only the modules imported when it was built: import it at the "
                 "top of the plugin's module")
    return text
