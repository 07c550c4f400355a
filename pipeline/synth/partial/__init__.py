"""Partial synthesis with synthpop ``syn()`` semantics (``synthesise: {kind: partial, ...}``).

* :mod:`~pipeline.synth.partial.params` — :class:`PartialParams`, the settings.
* :mod:`~pipeline.synth.partial.syn` — :func:`synthesise_partial`, :func:`plan_synthesis`
  (methods, visit sequence, predictor matrix), :class:`PartialSynthesisResult`.
* :mod:`pipeline.rpart` (shared with the utility measures) — rpart's anova and k-class trees (R-identical).
* :mod:`~pipeline.synth.partial.parametric` — norm, normrank, logreg, polyreg.
* :mod:`~pipeline.synth.partial.smooth` — density smoothing (R's ``bw.SJ``).
* :mod:`~pipeline.synth.partial.lindep` — synthpop's ``remove.lindep.syn``.

See ``docs/synthesis.md`` ("Partial synthesis").
"""
