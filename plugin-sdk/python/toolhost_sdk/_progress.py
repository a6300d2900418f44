"""Report how far the running call has come (`toolhost_sdk.progress`).

Under plain CPython (tests), reports go to stderr as `[progress] done/total message`.
"""

import sys

try:  # Present inside the component: componentize-py generates `wit_world` for the world.
    from wit_world.imports import host as _host
except ImportError:  # Plain CPython.
    _host = None


def progress(done, total=None, message=""):
    """Report `done` units of work out of `total` (None: not known), with a short `message`
    for the person waiting. Call it as often as is natural (every file, every MiB): the host
    forwards at most about ten reports a second (always the last one), keeps `done` from going
    backwards and cuts messages past 200 characters. It never fails.
    """
    done = max(0, int(done))
    total = None if total is None else max(0, int(total))
    message = str(message)
    if _host is None:
        shown = f"{done}/{total}" if total is not None else f"{done}"
        print(f"[progress] {shown} {message}".rstrip(), file=sys.stderr)
    else:
        _host.progress(done, total, message)
