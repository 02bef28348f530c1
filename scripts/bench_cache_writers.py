"""Time the cache writers per frame (10,000 points, 48 frames) side by side in one run.

    PYTHONPATH=python3.11libs python scripts/bench_cache_writers.py [--points 10000] [--frames 48]

Prints milliseconds per frame and the size on disk for OBJ and .geo sequences and for the USD
cache committed every frame (worst case for a streamed single file: each commit rewrites the
whole layer) and with the default throttle (commit_ratio 5).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from pbdcloth.io.cache import FrameData, SequenceWriter, UsdWriter
from pbdcloth.scenes.cloth import grid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--frames", type=int, default=48)
    args = ap.parse_args()
    side = round(args.points ** 0.5)
    pos, tris = grid(side, side, 1.0, 1.0)
    rng = np.random.default_rng(0)
    frames = [pos + 0.01 * k * rng.standard_normal(pos.shape) for k in range(args.frames)]
    vel = rng.standard_normal(pos.shape)
    w = np.full(pos.shape[0], 100.0)
    strain = np.abs(rng.standard_normal(pos.shape[0])) * 0.01
    print(f"{pos.shape[0]} points, {tris.shape[0]} triangles, {args.frames} frames")
    print(f"{'writer':28s} {'ms/frame':>9s} {'MB on disk':>11s} {'commits':>8s}")
    with tempfile.TemporaryDirectory() as tmp:
        cases = [("obj sequence", "obj", 0.0), ("geo sequence (fpreal32)", "geo", 0.0),
                 ("usd, commit every frame", "usd", 0.0), ("usd, commit_ratio 5", "usd", 5.0)]
        for label, fmt, ratio in cases:
            out = Path(tmp) / label.replace(" ", "_").replace(",", "")
            writer = (UsdWriter(out, "cloth", tris, 24.0, 1, inverse_mass=w, commit_ratio=ratio)
                      if fmt == "usd" else SequenceWriter(out, "cloth", fmt))
            commits = 0
            begin = time.perf_counter()
            for k, x in enumerate(frames, start=1):
                data = FrameData(positions=x, triangles=tris, velocities=vel, inverse_mass=w,
                                 strain=strain)
                commits += bool(writer.write(k, data))
            writer.close()
            ms = 1000 * (time.perf_counter() - begin) / args.frames
            size = sum(p.stat().st_size for p in out.iterdir()) / 1e6
            print(f"{label:28s} {ms:9.1f} {size:11.2f} {commits if fmt == 'usd' else '-':>8}")


if __name__ == "__main__":
    main()
