"""The output folder of a run: one writer at a time, writable, with room for the first frames.

* :func:`output_lock` holds an exclusive ``fcntl.flock`` on ``DIR/.pbdcloth.lock`` for the whole
  run. The operating system releases it when the process ends in any way (exit, exception,
  SIGKILL), so a crashed run never leaves a stale lock; a second run into the same folder is
  refused at once with the holder's process id (written into the lock file).
* :func:`check_output_folder` refuses, before the first frame, a path that is a file, a folder
  that cannot be created or written (a probe file is written, synced and removed), and a disk
  with less free space than :data:`MIN_FREE_BYTES` plus the first frames and a checkpoint.
* :class:`RunFailed` is what a run raises when writing fails part way (disk full, folder made
  read-only): the files on disk are still complete (every write is atomic), and the message says
  which frame was the last complete one and how to continue.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import IO

LOCK_NAME = ".pbdcloth.lock"

#: Free space always kept in reserve before a run starts [bytes].
MIN_FREE_BYTES = 1 << 20

#: errno values that mean "the disk or the folder cannot take more writes".
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM,
                         errno.EFBIG})


class OutputFolderError(ValueError):
    """The output folder cannot be used: a file of that name, not writable, too little free
    space, or another run is writing into it. Nothing has been written."""


class RunFailed(RuntimeError):
    """Writing failed part way through a run; the frames on disk are complete.

    Attributes: ``last_complete`` (the last frame whose cache and checkpoint are on disk, or
    None when there is none).
    """

    def __init__(self, message: str, last_complete: int | None) -> None:
        super().__init__(message)
        self.last_complete = last_complete


def _prepare(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise OutputFolderError(f"output folder {str(folder)!r} is an existing file; "
                                "choose another --out")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputFolderError(f"cannot create output folder {str(folder)!r}: "
                                f"{exc.strerror}; choose another --out") from None


def _holder(handle: IO[str]) -> str:
    with contextlib.suppress(OSError, ValueError):
        handle.seek(0)
        pid = handle.read().strip()
        if pid.isdigit():
            return f"process {pid}"
    return "another process"


def _acquire(path: Path, folder: Path) -> IO[str]:
    """Open ``path`` and take its exclusive flock, or OutputFolderError naming the holder.

    A finished run removes the lock file while it still holds the lock, so after taking the
    lock the file must still be the one at ``path`` (same inode); otherwise start again.
    """
    import fcntl

    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise OutputFolderError(f"cannot write into output folder {str(folder)!r}: "
                                    f"{exc.strerror}; choose another --out") from None
        handle = os.fdopen(fd, "r+", encoding="ascii")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(handle)
            handle.close()
            raise OutputFolderError(
                f"output folder {str(folder)!r} is being written by {holder} (another "
                "pbdcloth run); wait for it to finish or choose another --out") from None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return handle
        handle.close()


@contextlib.contextmanager
def output_lock(folder: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the exclusive lock of ``folder`` (created if needed) while the block runs.

    The lock file ``DIR/.pbdcloth.lock`` holds the owner's PID while it runs and is removed
    when the block ends; a killed run leaves it behind unlocked, and the next run takes it.

    Raises:
        OutputFolderError: another run holds the lock (its PID is named), or the folder
            cannot be created.
    """
    target = Path(folder)
    _prepare(target)
    path = target / LOCK_NAME
    handle = _acquire(path, target)
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield path
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        handle.close()  # closing the descriptor releases the lock


def check_output_folder(folder: str | os.PathLike[str], first_bytes: int = 0) -> None:
    """Refuse an output folder that cannot take the run's first frames (before any is written).

    Writes, syncs and removes a probe file of ``min(first_bytes, 1 MiB)`` bytes, then asks for
    ``MIN_FREE_BYTES + first_bytes`` of free space (``first_bytes``: the caller's estimate of
    the first frames plus a checkpoint).

    Raises:
        OutputFolderError: naming the folder, what failed and what to do.
    """
    target = Path(folder)
    _prepare(target)
    probe = target / f".pbdcloth-probe-{os.getpid()}"
    try:
        with open(probe, "wb") as fh:
            fh.write(b"\0" * min(max(first_bytes, 1), MIN_FREE_BYTES))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise OutputFolderError(f"cannot write into output folder {str(target)!r}: "
                                f"{exc.strerror or exc}; free some space, fix its permissions "
                                "or choose another --out") from None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    free = shutil.disk_usage(target).free
    need = MIN_FREE_BYTES + max(first_bytes, 0)
    if free < need:
        raise OutputFolderError(f"output folder {str(target)!r} has {free / 1e6:.1f} MB free, "
                                f"the first frames need about {need / 1e6:.1f} MB; free some "
                                "space or choose another --out")


def is_disk_error(exc: BaseException) -> bool:
    """True for an OSError that means the disk is full or the folder became unwritable."""
    return isinstance(exc, OSError) and exc.errno in DISK_ERRNOS


__all__ = ["LOCK_NAME", "MIN_FREE_BYTES", "OutputFolderError", "RunFailed",
           "check_output_folder", "is_disk_error", "output_lock"]
