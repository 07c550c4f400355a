"""Running a task's units of work (the entry points are in :mod:`pipeline.runner`).

* :mod:`~pipeline.run.inputs` — reading, aligning and persisting the originals and sources;
  schema-only stand-ins of synthesised sources; the privacy-budget plan.
* :mod:`~pipeline.run.units` — one unit's checks and evaluation, its table of rows.
* :mod:`~pipeline.run.cache` — :class:`~pipeline.run.cache.UnitOutput` and the unit and
  synthesis caches under ``<out>/.units``.
* :mod:`~pipeline.run.groups` — repetition groups: a partial synthesis and the measure units on
  its sets as one task on a worker.
* :mod:`~pipeline.run.schedule` — running units ``concurrency`` at a time, progress lines.
* :mod:`~pipeline.run.work` — a run's work once its inputs are read: checks, privacy-budget
  plan and claim, then the units on the cluster (or from the cache).
* :mod:`~pipeline.run.split` — a dataset's ``holdout: {fraction}`` split, before any synthesis.
* :mod:`~pipeline.run.folder` — the run folder: owner, stale files, writing it (manifest last).
"""
