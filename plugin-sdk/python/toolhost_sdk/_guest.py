"""The component side: the dispatch behind the `tools.call` export. The generated entry module
(see `_build.ENTRY`) imports the author's module, calls `prepare()` while componentize-py
pre-initializes the component, and forwards `Tools.call` to `dispatch`."""

import sys
import traceback

from . import _spec
from ._spec import ToolError, decode_args, encode_result

_specs = None


def prepare():
    """Derive every tool's spec now (at build time inside the component, once per test run
    under CPython)."""
    global _specs
    _specs = {s.name: s for s in _spec.derive_all()}
    return _specs


def dispatch(tool, args):
    """(True, output) or (False, error message) for one call; never raises."""
    specs = _specs if _specs is not None else prepare()
    spec = specs.get(tool)
    if spec is None:
        return False, f"this plugin has no tool named `{tool}`"
    try:
        return True, encode_result(spec, spec.func(*decode_args(spec, args)))
    except ToolError as e:
        return False, str(e) or type(e).__name__
    except Exception as e:
        # The traceback goes to the guest's stderr, which the host writes to its log.
        traceback.print_exc(file=sys.stderr)
        text = str(e)
        text = f"{type(e).__name__}: {text}" if text else type(e).__name__
        if isinstance(e, ModuleNotFoundError):
            text += ("; a component holds only the modules imported when it was built: import it at the "
                     "top of the plugin's module")
        return False, text
