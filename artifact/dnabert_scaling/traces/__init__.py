"""Traces of GPU activity in one model, whichever tool recorded them.

``read_trace(path)`` reads one rank (a Score-P OTF2 anchor or experiment directory, or a
torch.profiler/Kineto ``.json``/``.json.gz``); ``read_run_traces(paths_or_dir, world_size)``
reads every rank of a run in parallel. Both return a :class:`Trace` whose tables are described
in ``model.py`` and ``docs/design.md``. A valid trace without GPU activity raises
:class:`NoGpuActivityError` (an ``ArtifactError``), which the analysis turns into a CPU-only
verdict instead of analysing an empty table.

Modules: ``model`` (tables), ``otf2_reader`` with its parts ``otf2_defs`` and ``otf2_tables`` and
``otf2_lowlevel`` (Score-P), ``kineto_reader``, ``classify`` and ``demangle`` (naming rules), ``loader``
(discovery, ranks, parallel reading), ``otf2_writer`` (Score-P 9 layout writer), ``convert`` and ``summary`` (subcommands),
``synth`` (synthetic study-shaped traces with known ground truth, for tests and benchmarks).
"""

from dnabert_scaling.traces.loader import read_run_traces, read_trace
from dnabert_scaling.traces.model import NoGpuActivityError, Trace

__all__ = ["read_trace", "read_run_traces", "Trace", "NoGpuActivityError"]
