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
