"""Safe synthetic data from coarsened margins (Raab) with IPF (mipfp/synthpop ``syn.ipf`` semantics).

Public API
----------
* The synthesiser contract (:mod:`pipeline.synth.base`): :class:`SynthesisParams`, :class:`Synthesiser`;
  the synthesisers by ``kind`` in :mod:`pipeline.synthesisers`.
* :func:`synthesise` / :class:`MarginsParams` / :class:`SynthesisResult` / :class:`MarginsSynthesiser` -
  the coarsened-margins method; :func:`synthesised_schema` - the schema of its output, without synthesising.
* :func:`apply_sdc` and the steps :class:`TopBottomCoding`, :class:`Categorise`, :class:`MergeLevels`.
* :func:`margin_sets`, :func:`tabulate`, :class:`MarginTable`, :class:`Layout`, :func:`write_margins`.
* :func:`control_margins` (variants V1/V2/V3), :func:`coarsen`, :func:`sdc_small`, :func:`adjust_total`.
* :func:`fit_ipf` -> :class:`IpfFit` with :class:`FitReport`.
* :func:`draw_synthetic` - multinomial sampling with chunk-independent seeds.
"""

from pipeline.lazy import lazy_exports

# the names are imported on first use: `import pipeline.synth.base` (the synthesiser contract, which
# the task loader needs) must not load the margins synthesiser's numba kernels and IPF engines
__getattr__ = lazy_exports(
    __name__,
    {
        "Synthesiser": "pipeline.synth.base",
        "SynthesisParams": "pipeline.synth.base",
        "MarginsParams": "pipeline.synth.coarsened_params",
        "MarginsSynthesiser": "pipeline.synth.coarsened",
        "SynthesisResult": "pipeline.synth.coarsened",
        "synthesise": "pipeline.synth.coarsened",
        "synthesise_frame": "pipeline.synth.coarsened",
        "synthesised_schema": "pipeline.synth.coarsened",
        "ControlledMargins": "pipeline.synth.control",
        "adjust_total": "pipeline.synth.control",
        "coarsen": "pipeline.synth.control",
        "control_margins": "pipeline.synth.control",
        "sdc_small": "pipeline.synth.control",
        "FitReport": "pipeline.synth.ipf",
        "IpfFit": "pipeline.synth.ipf",
        "fit_ipf": "pipeline.synth.ipf",
        "Layout": "pipeline.synth.margins",
        "MarginTable": "pipeline.synth.margins",
        "margin_sets": "pipeline.synth.margins",
        "read_margins": "pipeline.synth.margins",
        "tabulate": "pipeline.synth.margins",
        "write_margins": "pipeline.synth.margins",
        "draw_synthetic": "pipeline.synth.sample",
        "Categorise": "pipeline.synth.sdc",
        "MergeLevels": "pipeline.synth.sdc",
        "SdcResult": "pipeline.synth.sdc",
        "TopBottomCoding": "pipeline.synth.sdc",
        "apply_sdc": "pipeline.synth.sdc",
    },
)


__all__ = [
    "Categorise",
    "ControlledMargins",
    "FitReport",
    "IpfFit",
    "Layout",
    "MarginTable",
    "MarginsParams",
    "MarginsSynthesiser",
    "MergeLevels",
    "SdcResult",
    "SynthesisParams",
    "SynthesisResult",
    "Synthesiser",
    "TopBottomCoding",
    "adjust_total",
    "apply_sdc",
    "coarsen",
    "control_margins",
    "draw_synthetic",
    "fit_ipf",
    "margin_sets",
    "read_margins",
    "sdc_small",
    "synthesise",
    "synthesise_frame",
    "synthesised_schema",
    "tabulate",
    "write_margins",
]
