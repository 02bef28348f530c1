"""Wedges: plans checked in full, members equal to `pbdcloth simulate` runs, faults on Dask.

The cluster tests run a 2 x 2 wedge (bend_stiffness x friction) of the drape scene at 12 x 12
points and compare every member's folder with a `pbdcloth simulate` run of the same settings,
file for file: caches and checkpoints byte for byte, ``log.jsonl`` and ``summary.json`` with
their timings (``ms``, ``seconds_this_run``, ``ms_per_frame``) left out, and the summary's
``resumed_from`` (which says that a retried or resumed member was resumed, as ``pbdcloth simulate
--resume`` does).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pbdcloth.cli.main import main
from pbdcloth.pipeline.checkpoint import load_checkpoint
from pbdcloth.pipeline.wedge import MAX_MEMBERS, WedgeError, plan_wedge, run_wedge
from pbdcloth.pipeline.wedge.execute import STATE_DIR, StorageError, check_shared_storage

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python3.11libs") + os.pathsep
       + os.environ.get("PYTHONPATH", "")}
dask_needed = pytest.mark.skipif(
    importlib.util.find_spec("distributed") is None,
    reason="dask[distributed] is not installed (pip install 'pbdcloth[dist]')")

VARY = ["--vary", "bend_stiffness=0.01,0.2", "--vary", "friction=0.2,0.6"]
COMBOS = [(0.01, 0.2), (0.01, 0.6), (0.2, 0.2), (0.2, 0.6)]
TIMINGS = {"ms", "seconds_this_run", "ms_per_frame", "resumed_from"}
TEMPORARY = re.compile(r"^\.")


def member_name(k: int) -> str:
    b, f = COMBOS[k]
    return f"w{k:04d}_bend_stiffness={b}_friction={f}"


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The drape example at 12 x 12 points (its [output] format obj)."""
    text = (ROOT / "examples" / "drape.toml").read_text()
    text = text.replace("nx = 32, ny = 32", "nx = 12, ny = 12").replace('format = "usd"',
                                                                         'format = "obj"')
    path = tmp_path_factory.mktemp("scene") / "drape.toml"
    path.write_text(text)
    return path


def simulate_runs(scene: Path, out: Path, frames: int) -> Path:
    """The four members as plain `pbdcloth simulate` runs: ``out / member_name(k)``."""
    for k, (b, f) in enumerate(COMBOS):
        assert main(["simulate", str(scene), "--out", str(out / member_name(k)), "--frames",
                     str(frames), "--bend-stiffness", str(b), "--friction", str(f),
                     "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def reference8(scene: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulate_runs(scene, tmp_path_factory.mktemp("ref8"), 8)


@pytest.fixture(scope="module")
def reference24(scene: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulate_runs(scene, tmp_path_factory.mktemp("ref24"), 24)


def _files(folder: Path) -> list[Path]:
    return sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())


def _without_timings(text: str, lines: bool) -> Any:
    if lines:
        return [{k: v for k, v in json.loads(r).items() if k not in TIMINGS}
                for r in text.splitlines()]
    return {k: v for k, v in json.loads(text).items() if k not in TIMINGS}


def assert_same_folder(got: Path, want: Path) -> None:
    """Same file names; same bytes, timings aside; no hidden (temporary) file."""
    assert _files(got) == _files(want), got.name
    assert not [p for p in got.rglob("*") if TEMPORARY.match(p.name)], "a temporary file is left"
    for rel in _files(want):
        if rel.name in ("log.jsonl", "summary.json"):
            lines = rel.name == "log.jsonl"
            assert _without_timings((got / rel).read_text(), lines) == _without_timings(
                (want / rel).read_text(), lines), rel
        else:
            assert (got / rel).read_bytes() == (want / rel).read_bytes(), rel


def assert_same_members(wedge: Path, reference: Path) -> None:
    for k in range(4):
        assert_same_folder(wedge / member_name(k), reference / member_name(k))


def rows(wedge: Path) -> list[dict[str, Any]]:
    return json.loads((wedge / "wedge.json").read_text())["rows"]


# --- the plan ----------------------------------------------------------------------------
def test_members_are_the_product_in_row_major_order_with_the_documented_names(
        scene: Path, tmp_path: Path) -> None:
    plan = plan_wedge(scene, ["bend_stiffness=0.01,0.05,0.2", "friction=0.2,0.6"],
                      out=tmp_path)
    assert [m.name for m in plan.members] == [
        "w0000_bend_stiffness=0.01_friction=0.2", "w0001_bend_stiffness=0.01_friction=0.6",
        "w0002_bend_stiffness=0.05_friction=0.2", "w0003_bend_stiffness=0.05_friction=0.6",
        "w0004_bend_stiffness=0.2_friction=0.2", "w0005_bend_stiffness=0.2_friction=0.6"]
    zipped = plan_wedge(scene, ["bend_stiffness=0.01,0.2", "substeps=5,10"], zipped=True,
                        out=tmp_path)
    assert [m.settings() for m in zipped.members] == [
        {"bend_stiffness": 0.01, "substeps": 5}, {"bend_stiffness": 0.2, "substeps": 10}]
    assert zipped.command(zipped.members[1])[-4:] == ["--bend-stiffness", "0.2",
                                                      "--substeps", "10"]


def test_bad_input_is_refused_before_anything_starts_with_every_problem(
        scene: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "never"
    rc = main(["wedge", str(scene), "--vary", "bend_stifness=0.1,0.2", "--vary",
               "friction=0.2,-1", "--vary", "damping=", "--vary", "substeps=2,x",
               "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and not out.exists()
    assert "4 problems" in err
    assert "did you mean 'bend_stiffness'" in err
    assert "friction = -1" in err and "out of range" in err
    assert "damping = []: empty list" in err
    assert "substeps = 'x': is not a int value" in err
    with pytest.raises(WedgeError, match="more than 1000: add --yes") as info:
        plan_wedge(scene, ["substeps=" + ",".join(str(k) for k in range(1, 41)),
                           "iterations=" + ",".join(str(k) for k in range(1, 27))],
                   out=tmp_path)
    assert 40 * 26 > MAX_MEMBERS and len(info.value.problems) == 1
    with pytest.raises(WedgeError) as info:
        plan_wedge(scene, ["friction=0.2,0.2", "substeps=5,10,20", "damping=0.1"],
                   zipped=True, fixed={"damping": 0.2}, out=tmp_path)
    text = str(info.value)
    assert "appears twice" in text and "same length" in text and "both varied and fixed" in text


def test_a_wedge_table_in_the_scene_file_says_the_same(scene: Path, tmp_path: Path) -> None:
    table = scene.parent / "with_table.toml"
    table.write_text(scene.read_text() + "\n[wedge]\nzip = false\n[wedge.vary]\n"
                     "bend_stiffness = [0.01, 0.2]\nfriction = [0.2, 0.6]\n")
    from_table = plan_wedge(table, out=tmp_path)
    from_cli = plan_wedge(scene, VARY[1::2], out=tmp_path)
    assert [m.name for m in from_table.members] == [m.name for m in from_cli.members]
    assert main(["validate", str(table)]) == 0  # simulate and validate accept the table
    bad = scene.parent / "bad_table.toml"
    bad.write_text(scene.read_text() + "\n[wedge]\nzipp = true\n[wedge.vary]\n"
                   "frction = [0.2]\nsubsteps = 5\n")
    with pytest.raises(WedgeError) as info:
        plan_wedge(bad, out=tmp_path)
    text = str(info.value)
    assert "wedge.zipp" in text and "did you mean 'zip'" in text
    assert "did you mean 'friction'" in text and "wedge.vary.substeps = 5: must be a list" in text


def test_a_failing_member_is_marked_failed_and_the_others_go_on(
        scene: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        reference8: Path) -> None:
    from pbdcloth.pipeline.wedge import execute

    real = execute.simulate

    def simulate(spec: Any, **kwargs: Any) -> Any:
        if spec.settings.bend_stiffness == 0.2 and spec.settings.friction == 0.2:
            raise FloatingPointError("the cloth diverged at frame 3")
        return real(spec, **kwargs)

    monkeypatch.setattr(execute, "simulate", simulate)
    plan = plan_wedge(scene, VARY[1::2], out=tmp_path, frames=8)
    result = run_wedge(plan, serial=True, progress=False)
    status = [r["status"] for r in result.rows]
    assert status == ["done", "done", "failed", "done"]
    assert result.rows[2]["message"] == "FloatingPointError: the cloth diverged at frame 3"
    for k in (0, 1, 3):
        assert_same_folder(tmp_path / member_name(k), reference8 / member_name(k))
    csv = (tmp_path / "wedge.csv").read_text().splitlines()
    assert csv[0].startswith("index,name,bend_stiffness,friction,status,frames,max_strain,"
                             "min_collider_distance,ms_per_frame")
    assert csv[3].split(",")[4] == "failed" and len(csv) == 5
    assert (tmp_path / "wedge.png").stat().st_size > 10_000


def test_a_retry_resumes_from_the_checkpoint_and_removes_what_a_killed_write_left(
        scene: Path, tmp_path: Path, reference8: Path) -> None:
    """The second attempt of a task (same wedge token) resumes, after deleting the temporary
    files of atomic writes killed mid-way, so the folder equals an uninterrupted run's."""
    from pbdcloth.pipeline.simulate import simulate
    from pbdcloth.pipeline.wedge.execute import make_tasks, run_member

    plan = plan_wedge(scene, VARY[1::2], out=tmp_path, frames=8)
    (tmp_path / STATE_DIR).mkdir()
    task = make_tasks(plan, "token-1", resume=False)[0]
    folder = tmp_path / task.name
    Path(task.state).write_text(json.dumps({"token": "token-1", "attempt": 1}))
    from pbdcloth.pipeline.scenefile import load_scene

    spec = load_scene(task.scene, task.overrides, task.settings)
    simulate(spec, progress=False, on_progress=lambda frame, last: frame >= 4)  # "killed"
    for target, how in (("cloth.0005.obj", "atomic_write"), ("log.jsonl", "atomic_path")):
        code = ("import os, signal\nfrom pbdcloth.atomic import atomic_path, atomic_write\n"
                f"p = {str(folder / target)!r}\n"
                + ("with atomic_write(p) as fh:\n    fh.write('v 1 2')\n"
                   "    os.kill(os.getpid(), signal.SIGKILL)\n" if how == "atomic_write" else
                   "atomic_path(p).write_text('half')\nos.kill(os.getpid(), signal.SIGKILL)\n"))
        subprocess.run([sys.executable, "-c", code], env=ENV, timeout=60, check=False)
    assert len([p for p in folder.iterdir() if p.name.startswith(".")]) == 2
    row = run_member(task)
    assert row["status"] == "done" and row["attempt"] == 2 and row["resumed_from"] == 4
    assert row["frames_simulated"] == 4
    assert_same_folder(folder, reference8 / member_name(0))


def test_the_hython_script_runs_one_member_into_the_wedge_s_folder(
        scene: Path, tmp_path: Path, reference8: Path) -> None:
    """``scripts/wedge.py --member K`` (one TOP work item) = member K of ``pbdcloth wedge``."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "wedge.py"), str(scene),
                           *VARY, "--out", str(tmp_path), "--frames", "8", "--member", "1"],
                          env=ENV, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == ["bend_stiffness=0.01", "friction=0.6", str(tmp_path / member_name(1))]
    assert_same_folder(tmp_path / member_name(1), reference8 / member_name(1))
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "wedge.py"), str(scene),
                          *VARY, "--out", str(tmp_path), "--member", "4"], env=ENV,
                         capture_output=True, text=True, timeout=300, check=False)
    assert bad.returncode == 2 and "members 0-3" in bad.stderr


def test_the_core_never_imports_dask(scene: Path, tmp_path: Path) -> None:
    code = (
        "import sys, pbdcloth, pbdcloth.cli.main, pbdcloth.pipeline.simulate\n"
        "from pbdcloth.pipeline.wedge import plan_wedge, run_wedge\n"
        f"plan = plan_wedge({str(scene)!r}, ['friction=0.2,0.6'], out={str(tmp_path)!r}, "
        "frames=2)\n"
        "assert all(r['status'] == 'done' for r in run_wedge(plan, serial=True, "
        "progress=False, picture=False).rows)\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')]\n"
        "assert not bad, bad\n")
    done = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr


def test_a_remote_cluster_whose_workers_do_not_share_the_folder_is_refused(
        scene: Path, tmp_path: Path) -> None:
    plan = plan_wedge(scene, ["friction=0.2"], out=tmp_path)
    plan.out.mkdir(parents=True, exist_ok=True)

    class Client:
        """Two workers: one sees the folder, the other (another machine) does not."""

        def run(self, fn: Any, folder: str, probe: str, content: str, scene: str) -> Any:
            here = fn(folder, probe, content, scene)
            there = dict(here, sees_folder=False, host="farm-7")
            return {"tcp://10.0.0.1:4001": here, "tcp://10.0.0.7:4001": there}

    with pytest.raises(StorageError, match=r"tcp://10.0.0.7:4001 \(farm-7\) does not see"):
        check_shared_storage(Client(), plan)
    assert not list((tmp_path / STATE_DIR).iterdir())  # the probe file is gone
    answers = Client().run(lambda *a: {"host": "x", "sees_folder": True, "writable": True,
                                       "sees_scene": True, "pbdcloth": "0", "numpy": "0"},
                           "", "", "", "")
    assert len(answers) == 2


# --- on Dask -----------------------------------------------------------------------------
@dask_needed
def test_a_2x2_wedge_on_an_embedded_cluster_equals_four_simulate_runs(
        scene: Path, tmp_path: Path, reference8: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "wedge"
    rc = main(["wedge", str(scene), *VARY, "--out", str(out), "--workers", "2",
               "--frames", "8"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "4 of 4 done" in captured.out
    assert "wedge/s" in captured.err and "frames/s" in captured.err  # one bar over the wedges
    assert_same_members(out, reference8)
    got = rows(out)
    assert [r["status"] for r in got] == ["done"] * 4
    assert len({r["worker"] for r in got}) == 2  # both workers ran members
    for r in got:
        summary = json.loads((reference8 / r["name"] / "summary.json").read_text())
        assert r["max_strain"] == summary["max_strain"] and r["frames"] == 8


def _run_in_thread(plan: Any) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = run_wedge(plan, workers=2, progress=False)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            box["error"] = exc

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread, box


def _wait_for(condition: Any, seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def _log_lines(folder: Path) -> int:
    log = folder / "log.jsonl"
    return len(log.read_text().splitlines()) if log.is_file() else 0


@dask_needed
@pytest.mark.slow
def test_a_worker_killed_mid_run_is_retried_from_its_checkpoint(
        scene: Path, tmp_path: Path, reference24: Path) -> None:
    out = tmp_path / "wedge"
    plan = plan_wedge(scene, VARY[1::2], out=out, frames=24)
    thread, box = _run_in_thread(plan)
    victim = out / member_name(0)
    state = out / STATE_DIR / f"{member_name(0)}.json"
    _wait_for(lambda: _log_lines(victim) >= 4 and state.is_file(), 120, "member 0 to run")
    pid = json.loads(state.read_text())["pid"]
    assert pid != os.getpid()
    os.kill(pid, signal.SIGKILL)
    killed_at = _log_lines(victim)
    thread.join(timeout=300)
    assert not thread.is_alive() and "error" not in box, box.get("error")
    got = box["result"].rows
    assert killed_at < 24, "the member finished before it could be killed"
    assert [r["status"] for r in got] == ["done"] * 4
    assert got[0]["attempt"] == 2 and got[0]["resumed_from"] is not None
    assert got[0]["frames_simulated"] == 24 - got[0]["resumed_from"]
    assert_same_members(out, reference24)


def _members_state(out: Path) -> dict[int, int | None]:
    """Each member's checkpoint frame (None: no checkpoint yet)."""
    found: dict[int, int | None] = {}
    for k in range(4):
        ckpt = out / member_name(k) / "cloth.checkpoint.npz"
        found[k] = load_checkpoint(ckpt).frame if ckpt.is_file() else None
    return found


@dask_needed
@pytest.mark.slow
def test_resume_after_killing_the_whole_wedge_finishes_only_what_was_missing(
        scene: Path, tmp_path: Path, reference24: Path) -> None:
    out = tmp_path / "wedge"
    args = [sys.executable, "-m", "pbdcloth.cli", "wedge", str(scene), *VARY, "--out",
            str(out), "--workers", "2", "--frames", "24", "--quiet"]
    proc = subprocess.Popen(args, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        _wait_for(lambda: (out / member_name(0) / "summary.json").is_file()
                  or (out / member_name(1) / "summary.json").is_file(), 180,
                  "a first member to finish")
        _wait_for(lambda: any(_log_lines(out / member_name(k)) >= 3 for k in (2, 3)), 120,
                  "a second member to start")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    time.sleep(1.0)  # the worker processes die with their group
    at_kill = _members_state(out)
    complete = [k for k, f in at_kill.items() if f == 24]
    partial = [k for k, f in at_kill.items() if f is not None and f < 24]
    assert complete and partial, at_kill

    done = subprocess.run(args[:-1] + ["--resume", "--quiet"], env=ENV, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    got = rows(out)
    assert [r["status"] for r in got] == ["done"] * 4
    for k, frame in at_kill.items():
        r = got[k]
        if frame == 24:
            assert r["message"] == "complete already" and r["frames_simulated"] == 0
        elif frame is not None:
            assert r["resumed_from"] == frame and r["frames_simulated"] == 24 - frame
        else:
            assert r["resumed_from"] is None and r["frames_simulated"] == 23
    assert_same_members(out, reference24)

    # A member that fails on the cluster is reported with its message; the others stand.
    (out / member_name(3) / "cloth.checkpoint.npz").write_bytes(b"torn")
    again = subprocess.run(args[:-1] + ["--resume"], env=ENV, capture_output=True, text=True,
                           timeout=300, check=False)
    assert again.returncode == 1, again.stderr
    assert f"{member_name(3)}: failed: CheckpointError" in again.stderr
    got = rows(out)
    assert [r["status"] for r in got] == ["done", "done", "done", "failed"]
    assert "is not a pbdcloth checkpoint" in got[3]["message"]
    assert all(r["message"] == "complete already" for r in got[:3])


@dask_needed
@pytest.mark.slow
def test_the_same_wedge_on_a_separately_started_scheduler_and_two_workers(
        scene: Path, tmp_path: Path, reference8: Path) -> None:
    info = tmp_path / "scheduler.json"
    started: list[subprocess.Popen[bytes]] = []
    logs = tmp_path / "logs"
    logs.mkdir()

    def start(name: str, *args: str) -> None:
        started.append(subprocess.Popen(
            [sys.executable, "-m", f"distributed.cli.dask_{name.split('-')[0]}", *args],
            env=ENV, cwd=tmp_path, stdout=subprocess.DEVNULL,
            stderr=(logs / f"{name}.log").open("w"), start_new_session=True))

    try:
        start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
              "--scheduler-file", str(info))
        _wait_for(info.is_file, 60, "the scheduler")
        address = json.loads(info.read_text())["address"]
        for k in range(2):
            start(f"worker-{k}", address, "--nthreads", "1", "--nworkers", "1",
                  "--no-dashboard", "--host", "127.0.0.1")
        out = tmp_path / "wedge"
        done = subprocess.run([sys.executable, "-m", "pbdcloth.cli", "wedge", str(scene), *VARY,
                               "--out", str(out), "--frames", "8", "--scheduler", address,
                               "--workers", "2"], env=ENV, capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stderr + "".join(
            p.read_text() for p in logs.iterdir())
        assert "storage the workers share" in done.stdout
        assert_same_members(out, reference8)
        assert len({r["worker"] for r in rows(out)}) == 2
    finally:
        for proc in reversed(started):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in started:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)
