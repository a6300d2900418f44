"""The component side: the dispatch behind the `tools.call` and `resources.read` exports. The
generated entry module (see `__main__.ENTRY`) imports the author's module, calls `prepare()`
while componentize-py pre-initializes the component, and forwards `Tools.call` to `dispatch`
and `Resources.read` to `read`."""

import sys
import traceback

from . import _resources, _spec
from ._spec import ToolError, decode_args, encode_result

_specs = None
# The resources by URI and the templates by their `uriTemplate`, as the host names them.
_statics = None
_templates = None


def prepare():
    """Derive every tool's and resource's spec now (at build time inside the component, once
    per test run under CPython)."""
    global _specs, _statics, _templates
    _specs = {s.name: s for s in _spec.derive_all()}
    statics, templates = _resources.derive_all()
    _statics = {s.uri: s for s in statics}
    _templates = {s.uri: s for s in templates}
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


def _failure(e):
    """The error message for an exception a tool or a read raised: a ToolError's message as it
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
