"""Write to the host's log. Lines are attributed to the calling plugin and tool by the host.

Under plain CPython (tests), lines go to stderr as `[level] message`.
"""

import sys

try:  # Present inside the component: componentize-py generates `wit_world` for the world.
    from wit_world.imports import host as _host
except ImportError:  # Plain CPython.
    _host = None


def _write(level, message):
    message = str(message)
    if _host is None:
        print(f"[{level}] {message}", file=sys.stderr)
    else:
        _host.log(getattr(_host.Level, level.upper()), message)


def trace(message):
    """Log at `trace` level."""
    _write("trace", message)


def debug(message):
    """Log at `debug` level."""
    _write("debug", message)


def info(message):
    """Log at `info` level."""
    _write("info", message)


def warn(message):
    """Log at `warn` level."""
    _write("warn", message)


def error(message):
    """Log at `error` level."""
    _write("error", message)
