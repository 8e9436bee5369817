"""The ``slurm`` executor of the sweep: one batch job per world size, chained 1 -> 4 -> 8.

One job per module: ``config`` (the settings file, its checks and the ``sweep`` command's SLURM
options), ``cluster`` (``scontrol`` / ``sinfo`` / ``sacct`` queries, the checks against the
cluster, a job's state) and ``submit`` (job directories, ``scripts/slurm/sweep.sh``, waiting,
``run_slurm``; its docstring describes the job directory). The names the sweep, the CLI and the
tests use are importable from here.
"""

from __future__ import annotations

from dnabert_scaling.run.slurm.cluster import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    PartitionInfo,
    gres_gpus,
    job_state,
    nodes_for,
    partition_info,
    validate,
)
from dnabert_scaling.run.slurm.config import (
    CONFIG_KEYS,
    ENV_CONFIG,
    ENV_SCRIPTS,
    SlurmConfig,
    add_slurm_arguments,
    config_from_args,
    load_config,
)
from dnabert_scaling.run.slurm.submit import JobResult, SlurmJobError, group_plan, preflight, run_slurm, scripts_dir

__all__ = [
    "ACTIVE_STATES",
    "CONFIG_KEYS",
    "ENV_CONFIG",
    "ENV_SCRIPTS",
    "TERMINAL_STATES",
    "JobResult",
    "PartitionInfo",
    "SlurmConfig",
    "SlurmJobError",
    "add_slurm_arguments",
    "config_from_args",
    "gres_gpus",
    "group_plan",
    "job_state",
    "load_config",
    "nodes_for",
    "partition_info",
    "preflight",
    "run_slurm",
    "scripts_dir",
    "validate",
]
