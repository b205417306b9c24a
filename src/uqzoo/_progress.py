"""One progress bar for every long call: fits, summaries, evaluations, studies.

Every loop that can take more than a few seconds shows a bar when its
``progress_bar`` argument is true, and nothing otherwise. The bar is tqdm's
(``tqdm.auto``: a widget in notebooks, text on stderr in a terminal);
disabled, it is tqdm's no-op bar, so callers update and close it without
checking whether it exists.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["progress_bar"]


def progress_bar(iterable: Iterable[Any] | None = None, *, total: float | None = None,
                 desc: str, unit: str, enabled: bool = True, **options: Any) -> Any:
    """A tqdm bar (or its no-op twin when ``enabled`` is false), imported on first use.

    ``options`` go to tqdm unchanged (``initial``, ``bar_format``, ``file``,
    ``dynamic_ncols``, ...).
    """
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=not enabled, **options)
