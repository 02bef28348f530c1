"""Spring chains: contact depth against collision passes, and time per step.

Run: ``PYTHONPATH=python3.11libs python scripts/bench_springs.py``. Prints two Markdown tables:

1. A 4-joint chain (0.1 m bones, hit radius 2 cm) falling onto a sphere under a swaying parent,
   150 steps at 30 fps: the deepest any tail's hit sphere ends inside the sphere, per
   ``collision_passes`` and with ``settle_contacts``; distances measured here, independently.
2. Time per ``step`` of one chain of K joints with the body's 11 colliders (a 1.75 m
   ``Body``) or none, 1 and 4 passes, on a walking body. Timings are wall clock on a shared
   machine: compare the rows of one run, not runs.
"""

from __future__ import annotations

import math
import time

import numpy as np
from pbdcloth import Body, Sphere, SpringChain, SpringSettings


def sway(k: int) -> np.ndarray:
    m = np.eye(4)
    a = 0.3 * math.sin(k / 10)
    m[:2, :2] = [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]
    m[0, 3] = 0.05 * math.sin(k / 4)
    return m


def contact_depth(passes: int, settle: bool) -> float:
    ball = Sphere((0.15, -0.25, 0.0), 0.2)
    chain = SpringChain(np.arange(5)[:, None] * [0.1, 0.0, 0.0],
                        SpringSettings(stiffness=0.5, gravity=2.0, radius=0.02),
                        colliders=[ball], collision_passes=passes, settle_contacts=settle)
    worst = 0.0
    for k in range(150):
        chain.step(1 / 30, sway(k))
        gap = np.linalg.norm(chain.positions[1:] - ball.center, axis=1) - 0.2 - 0.02
        worst = max(worst, float(-gap.min()))
    return worst


def step_time(joints: int, colliders: bool, passes: int, steps: int = 200) -> float:
    body = Body(1.75)
    points = np.array([0.2, -0.35, 0.0]) + np.arange(joints + 1)[:, None] * [0.0, -0.8 / joints,
                                                                             -0.2 / joints]
    chain = SpringChain(points, SpringSettings(), colliders=body.colliders if colliders else (),
                        collision_passes=passes)
    chain.reset(body.frame(0.0))
    parents = []
    for k in range(steps):
        body.move_to_time(k / 30)
        parents.append(body.frame(k / 30))
    start = time.perf_counter()
    for m in parents:  # the colliders stay at the last pose: only the chain is timed
        chain.step(1 / 30, m)
    return (time.perf_counter() - start) / steps


def main() -> None:
    print("| collision_passes | deepest inside, VRM passes [mm] | with settle_contacts [m] |")
    print("|---|---|---|")
    for passes in (1, 2, 4, 8):
        print(f"| {passes} | {1000 * contact_depth(passes, False):.3f} | "
              f"{contact_depth(passes, True):.1e} |")
    print()
    print("| joints | colliders | passes | ms per step |")
    print("|---|---|---|---|")
    for joints in (4, 8, 16):
        for colliders, passes in ((False, 1), (True, 1), (True, 4)):
            ms = 1000 * step_time(joints, colliders, passes)
            print(f"| {joints} | {11 if colliders else 0} | {passes} | {ms:.3f} |")


if __name__ == "__main__":
    main()
