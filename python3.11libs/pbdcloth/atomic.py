"""Atomic file writes: a killed run never leaves a half-written file behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Iterator


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: Permissions of finished files: what ``open()`` would give (0o666 less the umask), not the
#: owner-only 0o600 of ``mkstemp``, so caches can be shared (render farm, other users).
_FILE_MODE = 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w",
                 encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success rename it over ``path``.

    The rename is atomic on POSIX and Windows (``os.replace``), so readers see either the old
    file or the complete new one. On error the temporary file is removed.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        binary = "b" in mode
        os.chmod(tmp, _FILE_MODE)
        with os.fdopen(fd, mode, encoding=None if binary else encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_path(path: str | os.PathLike[str]) -> Path:
    """A temporary path beside ``path`` for writers that need a file name (e.g. USD).

    The caller writes it and then calls ``os.replace(tmp, path)``.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=target.suffix, dir=target.parent)
    os.close(fd)
    os.chmod(tmp, _FILE_MODE)
    return Path(tmp)
