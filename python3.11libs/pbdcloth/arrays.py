"""Array type aliases shared by the whole package (one place instead of one per module).

Shapes and units are documented where the arrays are declared; these aliases only name dtypes.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

#: float64 array: positions [m], velocities [m/s], masses [kg], ...
F = NDArray[np.float64]
#: index array (``np.intp``): particle, triangle and constraint indices.
I = NDArray[np.intp]
#: int64 array: indices as stored in models and files.
I64 = NDArray[np.int64]
#: boolean mask.
B = NDArray[np.bool_]

__all__ = ["B", "F", "I", "I64"]


#: Largest coordinate accepted for positions and targets [m]: a thousand kilometres. Beyond it
#: float32 (the Warp backend) resolves less than 0.1 m and squared lengths approach overflow.
MAX_COORDINATE = 1e6


def real_array(value: object, what: str, error: type[Exception] = ValueError,
               shape: tuple[int, ...] | None = None, finite: bool = True,
               limit: float | None = None) -> F:
    """``value`` as a float64 array, or ``error`` naming ``what``, the problem and the value.

    Refuses text, complex numbers, objects and ragged lists (numpy would drop an imaginary part
    or fail with "could not convert"), a ``shape`` mismatch, NaN or inf when ``finite``, and
    magnitudes above ``limit``; the message names the first offending row.
    """
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise error(f"{what} must be an array of real numbers: {exc}") from None
    if raw.dtype.kind not in "iuf":
        kind = {"b": "true/false values", "c": "complex numbers", "U": "text", "S": "bytes", "O": "objects or ragged "
                "lists"}.get(raw.dtype.kind, f"dtype {raw.dtype}")
        raise error(f"{what} must be real numbers, got {kind}: {_excerpt(value)}")
    with np.errstate(over="ignore", invalid="ignore"):
        arr = np.array(raw, dtype=np.float64)
    if shape is not None and arr.shape != shape:
        raise error(f"{what} must have shape {shape}, got {arr.shape}")
    if finite or limit is not None:
        rows = arr.reshape(arr.shape[0], -1) if arr.ndim >= 1 and arr.shape[0] else \
            arr.reshape(1, -1)
        bad = ~np.isfinite(rows).all(axis=1) if finite else np.zeros(rows.shape[0], bool)
        if limit is not None:
            with np.errstate(invalid="ignore"):
                bad |= (np.abs(rows) > limit).any(axis=1)
        where = np.flatnonzero(bad)
        if where.size:
            r = int(where[0])
            rng = f"finite and within +-{limit:g}" if limit is not None else "finite"
            raise error(f"{what} must be {rng}; row {r} is {rows[r].tolist()} "
                        f"({where.size} bad row(s))")
    return arr


def _excerpt(value: object) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:77] + "..."


__all__ += ["MAX_COORDINATE", "real_array"]
