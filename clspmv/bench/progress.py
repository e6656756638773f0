"""The progress bar of ``clspmv bench`` (tqdm; nothing with ``--quiet``)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any


class Progress:
    """Steps of a run on one tqdm bar, whose total can shrink as plans change."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.bar: Any = None

    @contextmanager
    def start(self, total: int):
        """Show the bar of ``total`` steps for the duration of the ``with`` block."""
        from tqdm import tqdm

        with tqdm(total=total, disable=not self.enabled, unit="run", dynamic_ncols=True,
                  desc="clspmv bench") as self.bar:
            yield self
        self.bar = None

    def step(self, what: str) -> None:
        """One step done; ``what`` is shown beside the bar."""
        if self.bar is not None:
            self.bar.set_postfix_str(what, refresh=False)
            self.bar.update()

    def drop(self, steps: int) -> None:
        """``steps`` that will not run after all. A bar left with no step done and none to do
        (every matrix unreadable) is taken off the screen, so that the errors are not followed
        by an empty bar."""
        if self.bar is not None:
            self.bar.total -= steps
            if self.bar.total <= 0 and self.bar.n == 0:
                self.bar.clear()
                self.bar.disable = True  # tqdm then neither redraws it nor prints it on close

    def write(self, text: str, file: Any = None) -> None:
        """A line above the bar."""
        if self.bar is not None:
            self.bar.write(text, file=file)
