"""Running a wedge: one member per Dask task, on an embedded cluster or an existing scheduler.

A member is exactly ``pbdcloth simulate SCENE --out DIR/NAME --NAME VALUE ...``: the task
(:func:`run_member`) loads the scene file with the member's settings
(:func:`~pbdcloth.pipeline.scenefile.load_scene`) and runs
:func:`~pbdcloth.pipeline.simulate.simulate` into the member's folder, which therefore holds
the same files, bit for bit, as that command would write (cache, ``log.jsonl`` whose ``ms``
are timings, ``summary.json``, checkpoint).

Faults:

- A member that raises (a bad value, a diverging or failing run) returns a row with status
  ``failed`` and the message; the other members go on.
- A worker killed mid-run: Dask's scheduler runs the task again on a live worker (up to
  ``distributed.scheduler.allowed-failures`` times). Each task notes its attempt in
  ``DIR/.wedge/NAME.json`` with this wedge run's token; a second attempt of the same run resumes
  from the member's checkpoint (``simulate(resume=True)``) after removing the temporary files a
  killed atomic write leaves beside its target, so the member's files equal an uninterrupted
  run's and no partial file is left.
- ``resume=True``: members whose checkpoint is at the last frame (and made by the same scene and
  settings) are skipped without a task; the others resume from their checkpoints.

Progress: tasks send ``{index, attempt, stepped}`` events on the topic :data:`TOPIC` (Dask's
``Worker.log_event`` / ``Client.subscribe_topic``); one bar counts members done, running and
failed and the frames per second of the whole wedge.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...atomic import atomic_write
from ...version import __version__
from ..checkpoint import CheckpointError, load_checkpoint
from ..scenefile import OutputSpec, load_scene
from ..simulate import SUMMARY_NAME, checkpoint_path, simulate
from .plan import Member, WedgePlan
from .results import write_picture, write_tables

TOPIC = "pbdcloth-wedge"
STATE_DIR = ".wedge"
REPORT_SECONDS = 0.5
"""A running task reports its frames at most this often."""

Report = Callable[[dict[str, Any]], None]

#: Temporary files of :func:`pbdcloth.atomic.atomic_write` / ``atomic_path`` (``mkstemp`` with
#: the prefix ``.NAME.`` and 8 random characters), left behind only by a killed process.
_TEMPORARY = re.compile(r"^\..+\.[a-z0-9_]{8}(\.[A-Za-z0-9]+)+$")


@dataclass(frozen=True)
class Task:
    """What a worker needs to run one member (plain data, picklable)."""

    index: int
    name: str
    values: dict[str, Any]
    scene: str
    overrides: dict[str, Any]
    settings: dict[str, Any]
    state: str
    token: str
    resume: bool


def make_tasks(plan: WedgePlan, token: str, resume: bool) -> list[Task]:
    state = plan.out / STATE_DIR
    out = []
    for m in plan.members:
        over, settings = plan.overrides(m)
        out.append(Task(m.index, m.name, m.plain(), str(plan.scene), over, settings,
                        str(state / f"{m.name}.json"), token, resume))
    return out


def _attempt(task: Task) -> tuple[int, bool]:
    """This attempt's number and whether it resumes: a second attempt of the same wedge run
    (same token) continues from the member's checkpoint."""
    path = Path(task.state)
    attempt, resume = 1, task.resume
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
        if before.get("token") == task.token:
            attempt, resume = int(before.get("attempt", 0)) + 1, True
    except (OSError, ValueError):
        pass
    with atomic_write(path) as fh:
        json.dump({"token": task.token, "attempt": attempt, "pid": os.getpid(),
                   "host": socket.gethostname(), "started": time.time()}, fh)
    return attempt, resume


def remove_temporaries(folder: Path) -> list[Path]:
    """Delete the temporary files killed atomic writes left in ``folder``; return them."""
    gone = []
    if folder.is_dir():
        for path in folder.iterdir():
            if path.is_file() and _TEMPORARY.match(path.name):
                path.unlink()
                gone.append(path)
    return gone


def _worker_report() -> Report | None:
    """Send events to the client when running inside a Dask worker."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return None

    def report(msg: dict[str, Any]) -> None:
        worker.log_event(TOPIC, msg)

    return report


def _row(task: Task, status: str, **facts: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"index": task.index, "name": task.name, "values": task.values,
                           "status": status, "message": "", "frames": None,
                           "frames_simulated": 0, "resumed_from": None, "max_strain": None,
                           "min_collider_distance": None, "ms_per_frame": None,
                           "seconds": 0.0, "attempt": 1, "worker": "", "checkpoint": ""}
    row.update(facts)
    return row


def run_member(task: Task, report: Report | None = None) -> dict[str, Any]:
    """Run one member (the Dask task); return its row. Exceptions of the run become a row
    with status ``failed`` and the message."""
    report = report or _worker_report()
    attempt, resume = _attempt(task)
    where = f"{socket.gethostname()}:{os.getpid()}"
    begin = time.perf_counter()
    if report is not None:
        report({"index": task.index, "attempt": attempt, "stepped": 0, "state": "start"})
    try:
        spec = load_scene(task.scene, task.overrides, task.settings)
        if resume:
            remove_temporaries(spec.output.dir)
        first: list[int] = []
        last_sent = [0.0]

        def on_progress(frame: int, last: int) -> None:
            if not first:
                first.append(frame)
            now = time.perf_counter()
            if report is not None and now - last_sent[0] >= REPORT_SECONDS:
                last_sent[0] = now
                report({"index": task.index, "attempt": attempt,
                        "stepped": frame - first[0], "state": "running"})

        result = simulate(spec, resume=resume, progress=False, on_progress=on_progress)
    except Exception as exc:  # noqa: BLE001 - any failure of one member is that member's
        message = f"{type(exc).__name__}: {exc}"
        return _row(task, "failed", message=message, attempt=attempt, worker=where,
                    seconds=time.perf_counter() - begin)
    s = result.summary
    if report is not None:
        report({"index": task.index, "attempt": attempt, "stepped": result.frames_simulated,
                "state": "done"})
    return _row(task, "done", frames=s["frames"], frames_simulated=result.frames_simulated,
                resumed_from=result.resumed_from, max_strain=s["max_strain"],
                min_collider_distance=s["min_collider_distance"],
                ms_per_frame=s["ms_per_frame"], seconds=time.perf_counter() - begin,
                attempt=attempt, worker=where, checkpoint=str(checkpoint_path(spec)))


def complete_row(plan: WedgePlan, task: Task, member: Member) -> dict[str, Any] | None:
    """The row of a member already complete on disk (checkpoint at the last frame, made by the
    same scene and settings, and a summary), else None."""
    spec = plan.spec
    folder = plan.out / member.name
    mspec = replace(spec, settings=spec.settings.replace(**member.settings()),
                    output=OutputSpec(**{**spec.output.__dict__, "dir": folder}))
    ckpt, summary = checkpoint_path(mspec), folder / SUMMARY_NAME
    try:
        saved = load_checkpoint(ckpt)
        facts = json.loads(summary.read_text(encoding="utf-8"))
    except (CheckpointError, OSError, ValueError):
        return None
    if saved.digest != mspec.digest() or saved.frame < mspec.last_frame:
        return None
    return _row(task, "done", frames=mspec.frames, max_strain=facts.get("max_strain"),
                min_collider_distance=facts.get("min_collider_distance"),
                ms_per_frame=facts.get("ms_per_frame"), resumed_from=saved.frame,
                message="complete already", checkpoint=str(ckpt))


# ------------------------------------------------------------------------------------------
# progress
# ------------------------------------------------------------------------------------------
class WedgeProgress:
    """One bar over the members: done / running / failed and frames per second overall.

    tqdm when installed, else a line at every tenth of the members. :meth:`event` takes the
    tasks' reports (from any thread); :meth:`refresh` redraws.
    """

    def __init__(self, total: int, name: str, enabled: bool = True) -> None:
        self.total, self.name, self.enabled = total, name, enabled
        self.done = self.failed = 0
        self._lock = threading.Lock()
        self._running: set[int] = set()
        self._finished: set[int] = set()
        self._stepped: dict[tuple[int, int], int] = {}
        self._begin = time.perf_counter()
        self._bar: Any = None
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self._bar = tqdm(total=total, desc=name, unit="wedge", dynamic_ncols=True)

    def event(self, msg: dict[str, Any]) -> None:
        with self._lock:
            key = (int(msg["index"]), int(msg["attempt"]))
            self._stepped[key] = max(self._stepped.get(key, 0), int(msg["stepped"]))
            if msg.get("state") != "done" and key[0] not in self._finished:
                self._running.add(key[0])

    def finished(self, row: dict[str, Any]) -> None:
        with self._lock:
            self._running.discard(int(row["index"]))
            self._finished.add(int(row["index"]))
            if row["status"] == "done":
                self.done += 1
            else:
                self.failed += 1
        if self._bar is not None:
            self._bar.update(1)
        elif self.enabled and self.total:
            n = self.done + self.failed
            if n * 10 // self.total != (n - 1) * 10 // self.total:
                print(f"{self.name}: {n}/{self.total} wedges ({self.text()})", flush=True)
        self.refresh()

    @property
    def frames(self) -> int:
        with self._lock:
            return sum(self._stepped.values())

    def text(self) -> str:
        seconds = max(time.perf_counter() - self._begin, 1e-9)
        with self._lock:
            running = len(self._running)
        return (f"done {self.done}, running {running}, failed {self.failed}, "
                f"{self.frames / seconds:.1f} frames/s")

    def refresh(self) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(self.text(), refresh=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


# ------------------------------------------------------------------------------------------
# the whole wedge
# ------------------------------------------------------------------------------------------
@dataclass
class WedgeResult:
    """What :func:`run_wedge` did: one row per member in index order, the wall time, the
    Dask dashboard's address (empty when none) and the files written."""

    rows: list[dict[str, Any]]
    seconds: float
    dashboard: str = ""
    outputs: list[Path] = field(default_factory=list)

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["status"] != "done"]


class ClusterError(RuntimeError):
    """The Dask cluster cannot run the wedge (unreachable, too few workers)."""


class StorageError(ClusterError):
    """The workers of a remote cluster cannot see the wedge's folder or scene file."""


def probe_storage(folder: str, probe: str, content: str, scene: str) -> dict[str, Any]:
    """Run on each worker: can it read the client's probe file and the scene, and write in the
    wedge's folder? Also its pbdcloth and numpy versions."""
    import numpy as np

    target = Path(folder) / probe
    try:
        sees = target.read_text(encoding="utf-8") == content
    except OSError:
        sees = False
    writable = False
    mine = Path(folder) / f"{probe}.{socket.gethostname()}.{os.getpid()}"
    try:
        mine.write_text("ok", encoding="utf-8")
        mine.unlink()
        writable = True
    except OSError:
        pass
    return {"host": socket.gethostname(), "sees_folder": sees, "writable": writable,
            "sees_scene": Path(scene).is_file(), "pbdcloth": __version__,
            "numpy": np.__version__}


def check_shared_storage(client: Any, plan: WedgePlan) -> None:
    """Raise :class:`StorageError` unless every worker sees the wedge's folder (a probe file
    written here reads back there), can write in it, reads the scene file and runs the same
    pbdcloth version."""
    import numpy as np

    state = plan.out / STATE_DIR
    probe = f"probe-{uuid.uuid4().hex}"
    content = uuid.uuid4().hex
    path = state / probe
    with atomic_write(path) as fh:
        fh.write(content)
    try:
        try:
            answers = client.run(probe_storage, str(state), probe, content, str(plan.scene))
        except Exception as exc:  # noqa: BLE001 - whatever the workers raise
            raise StorageError(f"the workers could not run pbdcloth's storage check ({exc}); "
                               "install pbdcloth on every worker: pip install "
                               "'pbdcloth[dist]'") from None
    finally:
        path.unlink(missing_ok=True)
    problems = []
    for addr, a in sorted(answers.items()):
        if not a["sees_folder"]:
            problems.append(f"{addr} ({a['host']}) does not see {plan.out}")
        elif not a["writable"]:
            problems.append(f"{addr} ({a['host']}) cannot write in {plan.out}")
        if not a["sees_scene"]:
            problems.append(f"{addr} ({a['host']}) does not see the scene file {plan.scene}")
        if a["pbdcloth"] != __version__:
            problems.append(f"{addr} runs pbdcloth {a['pbdcloth']}, this is {__version__}")
        if a["numpy"] != np.__version__:
            problems.append(f"{addr} runs numpy {a['numpy']}, this is {np.__version__} "
                            "(results would not be bit-identical)")
    if not answers:
        problems.append("the scheduler has no workers")
    if problems:
        raise StorageError("with --scheduler the wedge's folder and the scene file must be on "
                           "storage every worker shares, at the same path:\n  "
                           + "\n  ".join(problems))


def _embedded(workers: int | None) -> tuple[Any, Any]:
    import logging

    import dask
    from distributed import Client, LocalCluster

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    count = workers or cores or 1
    # The workers start with the environment a `pbdcloth simulate` process has. By default
    # Dask's nanny sets MALLOC_TRIM_THRESHOLD_, which turns off glibc's dynamic mmap threshold
    # (every numpy temporary above 128 KiB is then mapped and unmapped again), and one-thread
    # BLAS variables; with them a member ran 23 % slower in a worker than alone
    # (scripts/bench_wedge.py on 2 cores: 1.61 x against 1.84 - 1.86 x without them).
    with dask.config.set({"distributed.nanny.pre-spawn-environ": {}}):
        cluster = LocalCluster(n_workers=count, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.ERROR)
    return cluster, Client(cluster)


def _remote(address: str, workers: int | None, timeout: float) -> Any:
    from distributed import Client

    try:
        client = Client(address, timeout=min(timeout, 15.0))
    except (TimeoutError, OSError, ValueError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler {address}: {exc}") from None
    try:
        client.wait_for_workers(workers or 1, timeout=timeout)
    except (TimeoutError, OSError) as exc:
        have = len(client.scheduler_info().get("workers", {}))
        client.close()
        raise ClusterError(f"{address}: fewer than {workers or 1} workers after {timeout:g} s "
                           f"({have} connected; {exc})") from None
    return client


def run_wedge(plan: WedgePlan, scheduler: str | None = None, workers: int | None = None,
              resume: bool = False, progress: bool = True, serial: bool = False,
              client: Any = None, picture: bool = True, timeout: float = 60.0,
              on_ready: Callable[[str], None] | None = None) -> WedgeResult:
    """Run every member of ``plan``; write ``wedge.csv``, ``wedge.json`` (after every member,
    atomically) and ``wedge.png`` into ``plan.out``.

    Args:
        scheduler: address of an existing Dask scheduler (``tcp://host:8786``); the folder
            must then be shared storage (checked: :func:`check_shared_storage`).
        workers: embedded cluster: its number of single-threaded worker processes (default one
            per core); with ``scheduler``: wait until this many workers are connected.
        resume: skip complete members, resume partial ones from their checkpoints.
        serial: run the members one after the other in this process (no Dask).
        client: a ``distributed.Client`` to use as it is.
        on_ready: called with the dashboard address (or "") once the cluster is up.
    """
    plan.out.mkdir(parents=True, exist_ok=True)
    (plan.out / STATE_DIR).mkdir(exist_ok=True)
    token = uuid.uuid4().hex
    tasks = make_tasks(plan, token, resume)
    rows: dict[int, dict[str, Any]] = {}
    todo: list[Task] = []
    for task, member in zip(tasks, plan.members):
        row = complete_row(plan, task, member) if resume else None
        if row is not None:
            rows[task.index] = row
        else:
            todo.append(task)
    bar = WedgeProgress(len(tasks), plan.spec.name, progress)
    for row in rows.values():
        bar.finished(row)
    begin = time.perf_counter()
    write_tables(plan, _ordered(plan, rows))
    dashboard = ""
    own: list[Any] = []
    try:
        if serial:
            if on_ready is not None:
                on_ready("")
            for task in todo:
                rows[task.index] = run_member(task, bar.event)
                bar.finished(rows[task.index])
                write_tables(plan, _ordered(plan, rows))
        elif todo:
            if client is None:
                if scheduler is not None:
                    client = _remote(scheduler, workers, timeout)
                    own = [client]
                    check_shared_storage(client, plan)
                else:
                    cluster, client = _embedded(workers)
                    own = [client, cluster]
                    client.run(_warm)  # imports belong to the start-up, not the first task
                    dashboard = cluster.dashboard_link if _has_dashboard() else ""
            if on_ready is not None:
                on_ready(dashboard)
            _run_on(client, todo, rows, bar, plan)
    finally:
        bar.close()
        for thing in own:
            thing.close()
    seconds = time.perf_counter() - begin
    ordered = _ordered(plan, rows)
    outputs = write_tables(plan, ordered)
    if picture:
        made = write_picture(plan, ordered)
        if made is not None:
            outputs.append(made)
    return WedgeResult(ordered, seconds, dashboard, outputs)


def _warm() -> None:
    """Import what a task runs (on each worker)."""
    import importlib

    importlib.import_module("pbdcloth.pipeline.simulate")


def _has_dashboard() -> bool:
    import importlib.util

    return importlib.util.find_spec("bokeh") is not None


def _ordered(plan: WedgePlan, rows: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for m in plan.members:
        out.append(rows.get(m.index) or {"index": m.index, "name": m.name,
                                         "values": m.plain(), "status": "pending"})
    return out


def _run_on(client: Any, todo: list[Task], rows: dict[int, dict[str, Any]],
            bar: WedgeProgress, plan: WedgePlan) -> None:
    """Submit one task per member and collect the rows as they finish."""
    client.subscribe_topic(TOPIC, lambda event: bar.event(event[1]))
    futures = {client.submit(run_member, task, key=f"pbdcloth-{task.token[:8]}-{task.name}",
                             pure=False, retries=1): task for task in todo}
    from distributed import wait

    pending = set(futures)
    try:
        while pending:
            try:
                finished = wait(pending, timeout=0.5, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                bar.refresh()
                continue
            for future in finished:
                pending.discard(future)
                task = futures[future]
                if future.status == "finished":
                    row = future.result()
                else:
                    exc = future.exception()
                    row = _row(task, "failed", message=f"{type(exc).__name__}: {exc}")
                future.release()
                rows[task.index] = row
                bar.finished(row)
            write_tables(plan, _ordered(plan, rows))
    finally:
        for future in pending:
            future.cancel()
        with contextlib.suppress(Exception):  # the client may be closing
            client.unsubscribe_topic(TOPIC)
