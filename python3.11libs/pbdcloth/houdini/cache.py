"""The in-memory simulation cache a simulating SOP keeps on its node.

Every simulated frame is kept as a :class:`FrameEntry` (the exact solver state the next frame
starts from, plus a digest of the animated inputs the frame read), so scrubbing back or a
sub-frame request is a lookup and playing forward resumes from the latest cached frame at or
before the requested one. The cache is bounded in bytes (the node's ``Cache Memory (MB)``): when
a new frame pushes it over the limit the frames stored first are dropped first, as the Vellum
Solver SOP's cache does. Pure Python and numpy: no ``hou`` needed.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MEGABYTE = 1024 * 1024


@dataclass
class FrameEntry:
    """One cached frame.

    Attributes:
        frame: the frame the state belongs to (its end).
        state: what the stepper needs to resume from here (arrays copied, never shared).
        inputs: digest of the animated inputs this frame read (pin targets, colliders); a later
            cook that reads a different digest at this frame knows the inputs were edited.
    """

    frame: int
    state: dict[str, Any]
    inputs: str = ""
    nbytes: int = field(default=0)

    def __post_init__(self) -> None:
        self.nbytes = _nbytes(self.state)


def _nbytes(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return 8


class FrameCache:
    """Frames by number, bounded by ``limit_bytes``; the first stored are dropped first.

    Args:
        limit_bytes: most bytes of frame data kept (at least the newest frame is kept).
        enabled: False keeps nothing (every :meth:`store` is a no-op).
    """

    def __init__(self, limit_bytes: int, enabled: bool = True) -> None:
        self.limit_bytes = int(limit_bytes)
        self.enabled = enabled
        self._frames: OrderedDict[int, FrameEntry] = OrderedDict()
        self.nbytes = 0
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._frames)

    def __contains__(self, frame: object) -> bool:
        return frame in self._frames

    def frames(self) -> list[int]:
        """The cached frame numbers, ascending."""
        return sorted(self._frames)

    def get(self, frame: int) -> FrameEntry | None:
        return self._frames.get(frame)

    def latest_at_or_before(self, frame: int) -> FrameEntry | None:
        """The cached entry with the largest frame number not after ``frame``."""
        best = [f for f in self._frames if f <= frame]
        return self._frames[max(best)] if best else None

    def store(self, entry: FrameEntry) -> None:
        """Keep ``entry`` (replacing one of the same frame), then drop the oldest stored frames
        until the cache fits its limit again (the new entry itself always stays)."""
        if not self.enabled:
            return
        old = self._frames.pop(entry.frame, None)
        if old is not None:
            self.nbytes -= old.nbytes
        self._frames[entry.frame] = entry
        self.nbytes += entry.nbytes
        while self.nbytes > self.limit_bytes and len(self._frames) > 1:
            _, dropped = self._frames.popitem(last=False)
            self.nbytes -= dropped.nbytes
            self.dropped += 1

    def set_limit(self, limit_bytes: int, enabled: bool = True) -> None:
        """A new limit (and on/off) from the node's parameters; shrinking drops oldest frames."""
        self.limit_bytes, self.enabled = int(limit_bytes), enabled
        if not enabled:
            self.clear()
            return
        while self.nbytes > self.limit_bytes and len(self._frames) > 1:
            _, dropped = self._frames.popitem(last=False)
            self.nbytes -= dropped.nbytes
            self.dropped += 1

    def drop_after(self, frame: int) -> None:
        """Forget every frame after ``frame`` (they will be simulated again)."""
        for f in [f for f in self._frames if f > frame]:
            self.nbytes -= self._frames.pop(f).nbytes

    def clear(self) -> None:
        self._frames.clear()
        self.nbytes = 0
