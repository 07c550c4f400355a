"""Writing a synthetic release (the m sets, their schema and a report) as one atomic folder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pipeline.data.dataset import write_dataset
from pipeline.data.schema import Schema
from pipeline.errors import ParameterError
from pipeline.evaluation.data import Frame
from pipeline.results import atomic_folder, json_text


def write_release(
    out_dir: str | Path,
    synthetic: Sequence[Frame],
    schema: Schema,
    formats: Sequence[str],
    report: tuple[str, dict[str, Any]],
    overwrite: bool = False,
    extra: Callable[[Path], None] | None = None,
) -> Path:
    """Write ``synthetic/syn<i>.<format>`` (+ ``.schema.json``), ``extra(folder)``'s files and the
    report ``(file name, content)`` into ``out_dir``, atomically (a temporary sibling renamed at the end).
    The folder and its files are readable by the owner only (0700 / 0600): the sets are record-level data.

    Raises
    ------
    ParameterError
        ``out_dir`` exists and ``overwrite`` is False.
    """
    out = Path(out_dir)
    if out.exists() and not overwrite:
        raise ParameterError(f"out_dir {out} already exists; pass overwrite=True to replace it")
    with atomic_folder(out, private=True) as tmp:
        (tmp / "synthetic").mkdir()
        for i, frame in enumerate(synthetic):
            for fmt in dict.fromkeys(formats):
                write_dataset(frame, tmp / "synthetic" / f"syn{i + 1}.{fmt}", schema)
        if extra is not None:
            extra(tmp)
        name, content = report
        (tmp / name).write_text(json_text(content, indent=1), encoding="utf-8")
    return out
