"""Batches of one color: contiguous slices of a family, and flat gather indices.

A color's constraints share no particle, so splitting a color into batches does not change what
any constraint computes (the values agree bit for bit, except that numpy's ``einsum`` rounds a
batch of a single constraint differently); batches of at most :data:`CHUNK` constraints keep every temporary in
the CPU's L2 cache and amortise numpy's per-call cost.

Positions are gathered from the flat component-major array R = [x..., y..., z...] (3 N,): the
flat index of component k of particle p is p + k N.
"""

from __future__ import annotations

import numpy as np

from ..arrays import F, I

#: Largest batch of constraints projected in one go.
CHUNK = 4096


def chunk_slices(span: slice, size: int = CHUNK) -> list[slice]:
    """``span`` (a color's slice of its family) cut into consecutive slices of at most ``size``."""
    return [slice(a, min(a + size, span.stop)) for a in range(span.start, span.stop, size)]


def flat_gather(columns: list[I], n: int) -> I:
    """Flat indices into R (3 N,) of the x, y, z components of each column's particles.

    For columns (c_1 .. c_k) of M particle indices, the result (3 k M,) reshaped to (k, 3, M)
    gathers c_1's x, y, z rows, then c_2's, and so on.
    """
    return np.concatenate([c + k * n for c in columns for k in range(3)]).astype(np.intp)


def flat_positions(positions: F) -> F:
    """The flat (3 N,) view R of C-contiguous component-major positions (3, N): writes to R
    change ``positions``."""
    if positions.ndim != 2 or positions.shape[0] != 3 or not positions.flags.c_contiguous:
        raise ValueError("positions must be a C-contiguous component-major (3, N) array")
    return positions.reshape(-1)
