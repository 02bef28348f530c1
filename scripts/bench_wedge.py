"""Time a wedge: serial in one process vs the embedded Dask cluster, and Dask's cost per task.

    python scripts/bench_wedge.py [--resolution 50] [--frames 48] [--workers 2] [--repeats 2]

Eight members (bend_stiffness 0.01, 0.05, 0.2, 0.5 x friction 0.2, 0.6) of the drape example
at RESOLUTION x RESOLUTION points (50: 2,500 particles), FRAMES frames each, OBJ caches in a
temporary folder. Printed, side by side from one run:

- wall time (the fastest of REPEATS runs, serial and cluster alternating, so that a busy
  machine slows both alike) of the serial wedge (``run_wedge(serial=True)``: the members one after the other in
  this process) and of the wedge on an embedded ``LocalCluster`` of WORKERS single-threaded
  processes (its start-up timed apart), and their ratio;
- as a control without Dask, the same members on the standard library's
  ``ProcessPoolExecutor`` with WORKERS processes: what the machine gives two processes at once;
- the overhead per task: (cluster wall time x workers - the members' own run times, timed
  inside the tasks) / members, which counts scheduling, sending the task and the result, and
  any idle worker; and the round trip of an empty task through the same cluster (submit to
  result, one at a time, median of 20);
- that overhead as a fraction of one member's run time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python3.11libs"))

from pbdcloth.pipeline.wedge import plan_wedge, run_wedge  # noqa: E402

VARY = ["bend_stiffness=0.01,0.05,0.2,0.5", "friction=0.2,0.6"]


def _scene(folder: Path, resolution: int) -> Path:
    text = (ROOT / "examples" / "drape.toml").read_text(encoding="utf-8")
    text = text.replace("nx = 32, ny = 32", f"nx = {resolution}, ny = {resolution}")
    path = folder / "drape.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _round_trip(workers: int, repeats: int = 20) -> tuple[float, float]:
    """Start-up of a LocalCluster [s] and the median submit-to-result time of a task that
    does nothing [ms]."""
    import logging

    from distributed import Client, LocalCluster

    begin = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=logging.ERROR)
    client = Client(cluster)
    client.wait_for_workers(workers)
    startup = time.perf_counter() - begin
    times = []
    try:
        for k in range(repeats):
            t0 = time.perf_counter()
            client.submit(abs, -k, pure=False).result()
            times.append(1000.0 * (time.perf_counter() - t0))
    finally:
        client.close()
        cluster.close()
    return startup, statistics.median(times)


def _pool(scene: Path, folder: Path, frames: int, workers: int) -> float:
    """Control without Dask: the members on the standard library's process pool [s]."""
    from concurrent.futures import ProcessPoolExecutor

    from pbdcloth.pipeline.wedge.execute import make_tasks, run_member

    plan = plan_wedge(scene, VARY, out=folder / "pool", frames=frames, fmt="obj")
    (plan.out / ".wedge").mkdir(parents=True)
    tasks = make_tasks(plan, "pool", resume=False)
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(abs, range(workers)))  # started before the clock
        begin = time.perf_counter()
        rows = list(pool.map(run_member, tasks))
        seconds = time.perf_counter() - begin
    assert all(r["status"] == "done" for r in rows), rows
    return seconds


def _once(scene: Path, folder: Path, frames: int, workers: int
          ) -> tuple[float, float, float, float, float]:
    """One serial, one cluster and one process-pool wedge, each into a fresh folder: serial
    wall [s], cluster wall without its start-up [s], the start-up [s], the members' own time
    on the cluster [s], the pool's wall [s]."""
    import shutil

    serial_plan = plan_wedge(scene, VARY, out=folder / "serial", frames=frames, fmt="obj")
    dask_plan = plan_wedge(scene, VARY, out=folder / "dask", frames=frames, fmt="obj")
    serial = run_wedge(serial_plan, serial=True, progress=False, picture=False)
    ready: list[float] = []
    begin = time.perf_counter()
    cluster = run_wedge(dask_plan, workers=workers, progress=False, picture=False,
                        on_ready=lambda _: ready.append(time.perf_counter()))
    end = time.perf_counter()
    assert not serial.failed and not cluster.failed, (serial.failed, cluster.failed)
    pool = _pool(scene, folder, frames, workers)
    for name in ("serial", "dask", "pool"):
        shutil.rmtree(folder / name)
    return (serial.seconds, end - ready[0], ready[0] - begin,
            sum(r["seconds"] for r in cluster.rows), pool)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolution", type=int, default=50)
    parser.add_argument("--frames", type=int, default=48)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2,
                        help="serial and cluster runs, alternating; the fastest of each counts")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        scene = _scene(folder, args.resolution)
        count = len(plan_wedge(scene, VARY, out=folder / "plan").members)
        particles = args.resolution * args.resolution
        runs = [_once(scene, folder, args.frames, args.workers) for _ in range(args.repeats)]
        startup, empty_ms = _round_trip(args.workers)
    serial_s = min(r[0] for r in runs)
    wedge_s, startup_in_run, own = min((r[1], r[2], r[3]) for r in runs)
    member_s = own / count
    overhead_ms = 1000.0 * (wedge_s * args.workers - own) / count
    print(f"{count} members of the drape at {particles} particles, {args.frames} frames each, "
          f"{args.workers} workers; fastest of {args.repeats} alternating runs "
          f"(serial {', '.join(f'{r[0]:.1f}' for r in runs)} s; cluster "
          f"{', '.join(f'{r[1]:.1f}' for r in runs)} s)")
    print()
    print("| run | wall time [s] | per member [s] | speed-up |")
    print("|---|---|---|---|")
    print(f"| serial (one process) | {serial_s:.2f} | {serial_s / count:.2f} | 1.00 x |")
    print(f"| embedded cluster, without its start-up | {wedge_s:.2f} | {member_s:.2f} | "
          f"{serial_s / wedge_s:.2f} x |")
    pool_s = min(r[4] for r in runs)
    print(f"| control: standard library process pool, {args.workers} processes, no Dask | "
          f"{pool_s:.2f} | | {serial_s / pool_s:.2f} x |")
    print(f"| embedded cluster, with its start-up ({startup_in_run:.2f} s) | "
          f"{wedge_s + startup_in_run:.2f} | | "
          f"{serial_s / (wedge_s + startup_in_run):.2f} x |")
    print()
    print("| overhead per task | ms | of one member's run time |")
    print("|---|---|---|")
    print(f"| (wall x workers - members' own time) / members | {overhead_ms:.1f} | "
          f"{100 * overhead_ms / (1000 * member_s):.2f} % |")
    print(f"| round trip of an empty task (median of 20) | {empty_ms:.2f} | "
          f"{100 * empty_ms / (1000 * member_s):.3f} % |")
    print(f"\n(cluster start-up alone, measured again: {startup:.2f} s)")


if __name__ == "__main__":
    main()
