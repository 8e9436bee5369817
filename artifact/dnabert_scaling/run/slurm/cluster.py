"""Cluster queries of the slurm executor: ``scontrol`` / ``sinfo`` / ``sacct`` and their parsing,
the partition's shape (``partition_info``), the checks of a configuration against the cluster before
anything is submitted (``validate``) and a job's state (``job_state``)."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.run.slurm.config import SlurmConfig, ascii_int

TERMINAL_STATES = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "OUT_OF_MEMORY",
    "SPECIAL_EXIT",
    "REVOKED",
}
ACTIVE_STATES = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "STAGE_OUT"}


def _run(cmd: Sequence[str], timeout: float = 60.0, check: bool = False) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise ArtifactError(f"{cmd[0]!r} not found: the slurm executor needs the SLURM client commands on PATH") from None
    except subprocess.TimeoutExpired:
        raise ArtifactError(f"{' '.join(cmd)} did not answer within {timeout:.0f} s") from None
    if check and proc.returncode != 0:
        raise ArtifactError(f"{' '.join(cmd)} failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()}")
    return proc


def _fields(line: str) -> dict[str, str]:
    """``Key=value`` pairs of one ``scontrol -o`` line (values run to the next `` Key=``)."""
    out: dict[str, str] = {}
    for m in re.finditer(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=(\S*)", line):
        out.setdefault(m.group(1), m.group(2))
    return out


@dataclass
class PartitionInfo:
    name: str
    total_nodes: int | None
    max_nodes: int | None  # per job; None = unlimited
    node_gpus: int  # the most GPUs (of gres_type, if given) on one of its nodes
    node_cpus: int  # the most CPUs on one of its nodes
    state: str


def gres_gpus(gres: str, gres_type: str | None = None) -> int:
    """GPUs in a node's ``Gres=`` field: ``gpu:8``, ``gpu:a100:4(S:0-1)``, ``gpu:a100:2,gpu:v100:2``."""
    total = 0
    for item in gres.split(","):
        item = item.split("(")[0].strip()
        parts = item.split(":")
        if not parts or parts[0] != "gpu" or len(parts) < 2:
            continue
        count = parts[-1]
        kind = parts[1] if len(parts) == 3 else None
        if gres_type and kind != gres_type:
            continue
        total += ascii_int(count) or 0
    return total


def partition_info(partition: str | None, gres_type: str | None = None) -> PartitionInfo:
    """The named (or the default) partition, from ``scontrol show partition`` and its nodes."""
    if partition:
        proc = _run(["scontrol", "-o", "show", "partition", partition])
        line = proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else ""
        if not line.startswith("PartitionName="):
            known = _run(["sinfo", "-h", "-o", "%R"]).stdout.split()
            raise ArtifactError(
                f"partition {partition!r} does not exist on this cluster (partitions: {', '.join(sorted(set(known))) or 'none'})"
            )
    else:
        proc = _run(["scontrol", "-o", "show", "partition"], check=True)
        lines = [ln for ln in proc.stdout.splitlines() if " Default=YES " in f" {ln} "]
        if not lines:
            raise ArtifactError("no partition given and the cluster has no default partition: set PARTITION / --partition")
        line = lines[0]
    info = _fields(line)
    nodes = info.get("Nodes", "")
    node_gpus = node_cpus = 0
    if nodes and nodes != "(null)":
        cmd = ["scontrol", "-o", "show", "node"] + ([] if nodes == "ALL" else [nodes])
        for node_line in _run(cmd).stdout.splitlines():
            nf = _fields(node_line)
            node_gpus = max(node_gpus, gres_gpus(nf.get("Gres", ""), gres_type))
            cpus = nf.get("CPUTot", "0")
            node_cpus = max(node_cpus, ascii_int(cpus) or 0)

    def num(key: str) -> int | None:
        return ascii_int(info.get(key, ""))

    return PartitionInfo(
        name=info.get("PartitionName", partition or "?"),
        total_nodes=num("TotalNodes"),
        max_nodes=num("MaxNodes"),
        node_gpus=node_gpus,
        node_cpus=node_cpus,
        state=info.get("State", "?"),
    )


def nodes_for(world_size: int, config: SlurmConfig) -> int:
    return math.ceil(world_size / config.gpus_per_node) if config.gpus_per_node > 0 else 1


def validate(config: SlurmConfig, world_sizes: Iterable[int]) -> PartitionInfo:
    """Check the settings against the cluster before anything is submitted (ArtifactError if not)."""
    config.check()
    for tool in ("sbatch", "scontrol", "sinfo"):
        if shutil.which(tool) is None:
            raise ArtifactError(f"{tool!r} not found: the slurm executor needs the SLURM client commands on PATH")
    if "is UP" not in _run(["scontrol", "ping"]).stdout:
        raise ArtifactError("the SLURM controller does not answer (scontrol ping)")
    try:
        part = partition_info(config.partition, config.gres_type)
    except ArtifactError as exc:
        if config.partition:
            raise ArtifactError(f"{config.where('partition')}: {exc}") from None
        raise
    gpn = config.gpus_per_node
    gtype = f" of type {config.gres_type}" if config.gres_type else ""
    for n in sorted(set(world_sizes)):
        nodes = nodes_for(n, config)
        what = f"world size {n}" + (f" ({nodes} node(s) x {gpn} GPU(s))" if gpn else " (CPU-only)")
        if config.max_nodes is not None and nodes > config.max_nodes:
            raise ArtifactError(
                f"{what} needs {nodes} nodes, more than {config.where('max_nodes')}={config.max_nodes} allows "
                f"(at most {config.max_nodes * gpn} ranks with {gpn} GPUs per node)"
            )
        if part.total_nodes is not None and nodes > part.total_nodes:
            raise ArtifactError(f"{what} needs {nodes} nodes but partition {part.name!r} has {part.total_nodes}")
        if part.max_nodes is not None and nodes > part.max_nodes:
            raise ArtifactError(
                f"{what} needs {nodes} nodes but partition {part.name!r} allows MaxNodes={part.max_nodes} per job"
            )
        per_node = min(n, gpn)
        if gpn and per_node > part.node_gpus:
            raise ArtifactError(
                f"{what}: {config.where('gpus_per_node')}={gpn} asks for {per_node} GPU(s) per node but the nodes of "
                f"partition {part.name!r} have at most {part.node_gpus} GPU(s){gtype} (their GRES)"
            )
        if not gpn and part.node_cpus:
            need = n * (config.cpus_per_task or 1)
            if need > part.node_cpus:
                raise ArtifactError(
                    f"{what}: {n} task(s) x {config.cpus_per_task or 1} CPU(s) do not fit on one node of partition "
                    f"{part.name!r} ({part.node_cpus} CPUs); CPU-only jobs use one node"
                )
    return part


def job_state(job_id: str, job_dir: Path | None = None) -> tuple[str, int | None, str | None]:
    """(state, exit code, reason) of a job: scontrol, else the job's status file, else sacct."""
    proc = _run(["scontrol", "-o", "show", "job", job_id])
    if proc.returncode == 0 and "JobState=" in proc.stdout:
        f = _fields(proc.stdout.strip().splitlines()[0])
        code = f.get("ExitCode", "")
        exit_code = ascii_int(code.split(":")[0])
        return f.get("JobState", "UNKNOWN"), exit_code, f.get("Reason")
    if job_dir is not None:
        status = job_dir / f"status-{job_id}"
        if status.is_file():
            kv = dict(line.split("=", 1) for line in status.read_text().splitlines() if "=" in line)
            rc = ascii_int(kv.get("exit_code", ""))
            return ("COMPLETED" if rc == 0 else "FAILED"), rc, "from the job's status file"
    if shutil.which("sacct"):
        acct = _run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State,ExitCode"])
        if acct.returncode == 0 and acct.stdout.strip():
            state, _, code = acct.stdout.strip().splitlines()[0].partition("|")
            rc = code.split(":")[0]
            return (state.split() or ["UNKNOWN"])[0], ascii_int(rc), "from sacct"
    return "UNKNOWN", None, "the job is no longer known to scontrol and left no status file"
