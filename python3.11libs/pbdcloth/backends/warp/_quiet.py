"""Start Warp without its banner, and without the CUDA driver warning on a CPU-only machine.

Warp prints a greeting (version, devices, kernel cache) when it initializes, unless its log
level is above INFO; and its native library writes "Could not find or load the NVIDIA CUDA
driver" to the process's stderr when ``libcuda`` cannot be loaded, which is the normal state of
a CPU-only machine, not a problem. :func:`init_quietly` raises the log level to WARNING and,
only when ``libcuda`` cannot be loaded (checked with ``ctypes`` first, as Warp looks for it),
initializes Warp with file descriptor 2 pointed at /dev/null for the duration of ``wp.init()``.
Errors raised by ``wp.init()`` still propagate.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Iterator
from typing import Any

_CUDA_LIBRARIES = ("libcuda.so", "libcuda.so.1") if sys.platform != "win32" else ("nvcuda.dll",)


def cuda_driver_loadable() -> bool:
    """True when the CUDA driver library (the one Warp loads) can be loaded here."""
    for name in _CUDA_LIBRARIES:
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        return True
    return False


@contextlib.contextmanager
def _stderr_silenced() -> Iterator[None]:
    """Point file descriptor 2 (what native code writes to) at /dev/null, then restore it."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def init_quietly(wp: Any) -> None:
    """Initialize Warp (``wp.init()``) without the banner or a missing-driver warning."""
    config = wp.config
    warning = getattr(wp, "LOG_WARNING", None)
    if warning is not None and hasattr(config, "log_level"):
        config.log_level = max(int(config.log_level), int(warning))
    else:
        config.quiet = True
    if cuda_driver_loadable():
        wp.init()
        return
    with _stderr_silenced():
        wp.init()
