"""Who this process is in the job, and the process group.

Rank and world come from torchrun (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``,
``MASTER_PORT``) or, when only SLURM's variables are there, from ``SLURM_PROCID``,
``SLURM_LOCALID``, ``SLURM_NTASKS`` with the master taken from the first host of the job's node
list and the port derived from the job id. A process started by hand is rank 0 of 1.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import asdict, dataclass
from datetime import timedelta

from dnabert_scaling.errors import ArtifactError


@dataclass(frozen=True)
class RankInfo:
    rank: int
    local_rank: int
    world_size: int
    master_addr: str
    master_port: int
    source: str  # "torchrun", "slurm" or "single"

    def as_dict(self) -> dict:
        return asdict(self)


def _int_env(env: dict, name: str) -> int:
    try:
        return int(env[name])
    except ValueError:
        raise ArtifactError(f"environment variable {name}={env[name]!r} is not an integer") from None


def expand_first_host(nodelist: str) -> str:
    """First host name of a SLURM node list (``node[003-005,9]`` -> ``node003``).

    ``scontrol show hostnames`` is used when it exists; the parser below covers the common forms
    so that the rank set-up also works where ``scontrol`` is not on PATH (inside a container).
    """
    try:
        out = subprocess.run(
            ["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, timeout=10, check=True
        ).stdout.split()
        if out:
            return out[0]
    except (OSError, subprocess.SubprocessError):
        pass
    first = re.split(r",(?![^\[]*\])", nodelist)[0]
    m = re.match(r"^([^\[]+)\[([^\]]+)\](.*)$", first)
    if not m:
        return first
    prefix, ranges, suffix = m.groups()
    lo = ranges.split(",")[0].split("-")[0]
    return f"{prefix}{lo}{suffix}"


def free_port() -> int:
    """A TCP port free on the loopback interface now (for a process started by hand)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rank_info(env: dict | None = None) -> RankInfo:
    env = dict(os.environ if env is None else env)
    if "RANK" in env and "WORLD_SIZE" in env:
        info = RankInfo(
            rank=_int_env(env, "RANK"),
            local_rank=_int_env(env, "LOCAL_RANK") if "LOCAL_RANK" in env else 0,
            world_size=_int_env(env, "WORLD_SIZE"),
            master_addr=env.get("MASTER_ADDR", "127.0.0.1"),
            master_port=_int_env(env, "MASTER_PORT") if "MASTER_PORT" in env else 29500,
            source="torchrun",
        )
    elif "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        job = env.get("SLURM_JOB_ID", "0")
        nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or "127.0.0.1"
        port = _int_env(env, "MASTER_PORT") if "MASTER_PORT" in env else 15000 + int(job) % 20000 if job.isdigit() else 29500
        info = RankInfo(
            rank=_int_env(env, "SLURM_PROCID"),
            local_rank=_int_env(env, "SLURM_LOCALID") if "SLURM_LOCALID" in env else 0,
            world_size=_int_env(env, "SLURM_NTASKS"),
            master_addr=env.get("MASTER_ADDR") or expand_first_host(nodelist),
            master_port=port,
            source="slurm",
        )
    else:
        info = RankInfo(0, 0, 1, "127.0.0.1", free_port(), "single")
    if not 0 <= info.rank < info.world_size:
        raise ArtifactError(f"rank {info.rank} is outside world size {info.world_size} ({info.source} variables)")
    if not 1 <= info.master_port <= 65535:
        raise ArtifactError(f"environment variable MASTER_PORT={info.master_port} is not a TCP port (1 to 65535)")
    return info


def check_rendezvous_host(info: RankInfo) -> None:
    """Refuse (exit 2) a rendezvous host this machine cannot resolve, before the run folder is claimed: the
    process group would wait on it until its timeout and then fail with a C++ stack. One rank needs none."""
    if info.world_size < 2:
        return
    import socket

    try:
        socket.getaddrinfo(info.master_addr, info.master_port)
    except OSError as exc:
        raise ArtifactError(
            f"MASTER_ADDR={info.master_addr!r} ({info.source} variables) is not a host this machine can resolve "
            f"({exc.strerror or exc}): the ranks could not meet there"
        ) from None


def init_process_group(info: RankInfo, device_type: str, timeout_s: float):
    """Start the process group: NCCL on CUDA, gloo on CPU. Returns the backend name."""
    import torch.distributed as dist

    backend = "nccl" if device_type == "cuda" else "gloo"
    os.environ.setdefault("MASTER_ADDR", info.master_addr)
    os.environ.setdefault("MASTER_PORT", str(info.master_port))
    if backend == "nccl":
        # Abort on a hung or failed collective instead of waiting forever.
        os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    kwargs = {}
    if backend == "nccl":
        import torch

        kwargs["device_id"] = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group(
        backend=backend,
        init_method="env://",  # under torchrun this reuses the agent's store
        rank=info.rank,
        world_size=info.world_size,
        timeout=timedelta(seconds=timeout_s),
        **kwargs,
    )
    return backend
