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

from pipeline.synth.base import Synthesiser, SynthesisParams
from pipeline.synth.coarsened import (
    MarginsParams,
    MarginsSynthesiser,
    SynthesisResult,
    synthesise,
    synthesise_frame,
    synthesised_schema,
)
from pipeline.synth.control import ControlledMargins, adjust_total, coarsen, control_margins, sdc_small
from pipeline.synth.ipf import FitReport, IpfFit, fit_ipf
from pipeline.synth.margins import Layout, MarginTable, margin_sets, read_margins, tabulate, write_margins
from pipeline.synth.sample import draw_synthetic
from pipeline.synth.sdc import Categorise, MergeLevels, SdcResult, TopBottomCoding, apply_sdc

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
