"""The measure contract: one data boundary, one executor, Params -> Measure -> Result.

See :mod:`pipeline.evaluation.base` (the contract), :mod:`pipeline.evaluation.data`
(:class:`EvalData`, the only place that accepts frames or Datasets) and
:mod:`pipeline.evaluation.execution` (:class:`Executor`, the only place that talks to Dask's
client and decides in memory vs key blocks).
"""
