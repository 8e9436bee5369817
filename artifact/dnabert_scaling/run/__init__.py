"""The run side: everything that produces traces and run records.

- ``workload/``: what is trained (the DNABERT-2 port, the released tokenizer, GUE and synthetic data);
- ``train/``: one rank of ``train`` (the orchestrator ``rank.py`` and its parts);
- ``sweep/``: the world-size sweep, its plan and run records, and the local executor;
- ``slurm/``: the sweep's SLURM executor;
- ``tracing/``: running under a tracer (Score-P, torch.profiler) and the Score-P preflight;
- ``busbw.py``: the all_reduce bus-bandwidth benchmark; ``proctree.py``: ending a run with every
  process it started.

Nothing here reads a trace: the readers are in ``dnabert_scaling.traces``.
"""
