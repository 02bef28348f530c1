"""The run's progress bar: tqdm (frames per second and time left) when installed, else a line
printed at every tenth of the run."""

from __future__ import annotations

from typing import Any


class Progress:
    """Frames done out of ``total``, shown on stderr by tqdm or as ``NAME: frame n/total`` lines.

    ``initial`` frames count as done already (a resumed run); ``enabled=False`` shows nothing.
    """

    def __init__(self, total: int, name: str, initial: int = 0, enabled: bool = True) -> None:
        self.total, self.n, self.name, self.enabled = total, initial, name, enabled
        self._bar: Any = None
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self._bar = tqdm(total=total, initial=initial, desc=name, unit="frame",
                             dynamic_ncols=True)

    def update(self, k: int = 1) -> None:
        """``k`` more frames done."""
        self.n += k
        if self._bar is not None:
            self._bar.update(k)
        elif self.enabled and self.total > 0 and \
                self.n * 10 // self.total != (self.n - k) * 10 // self.total:
            print(f"{self.name}: frame {self.n}/{self.total}", flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
