"""bench_trace.py's rounds: one child process per mode (its environment and command line), then the
configurations step by step in turns, the order rotated from step to step, and the per-call loops in
turns; each process's exit status, pid, trace size, CUPTI client counts and Score-P messages kept with
the round."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

from bench_trace_modes import (
    CUPTI_CLIENT_ENV,
    CUPTI_CLIENT_LIB,
    CUPTI_CLIENT_MODES,
    DOMAIN_FILTER_LIB,
    DOMAIN_FILTER_MODES,
    ENTRY,
    MICRO_TURNS,
    MODES,
    REPLY,
    STEP_FIGURES,
    mode_variables,
)

REPLY_TIMEOUT_S = 300.0


class Child:
    """One child process and its command pipe; ``ask`` sends a command and waits for the reply."""

    def __init__(self, mode: str, args, work: Path, tag: str):
        self.mode, self.tag, self.exp, self.farewell = mode, tag, None, {}
        env = child_env(mode, work / tag, os.environ)
        if getattr(args, "sampler", None):  # --sample: the stack sampler in this child, its files in the folder
            env.update(
                LD_PRELOAD=" ".join(x for x in (args.sampler, env.get("LD_PRELOAD", "")) if x),
                HOST_SAMPLER_OUT=str(Path(args.sample).resolve()),
                HOST_SAMPLER_MARKED="1",
                HOST_SAMPLER_CLOCK=args.sample_clock,
            )
        if MODES[mode] is not None:
            self.exp = Path(env["SCOREP_EXPERIMENT_DIRECTORY"])
            self.exp.parent.mkdir(parents=True)
        self.log = open(work / f"{tag}.log", "w")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            child_argv(mode, args), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, bufsize=0
        )
        self.buf = b""

    def send(self, op: str, **kw) -> None:
        try:
            self.proc.stdin.write((json.dumps({"op": op, **kw}) + "\n").encode())
        except OSError as exc:  # the child is gone (a broken pipe)
            raise RuntimeError(f"{self.tag}: cannot be reached ({exc}; see {self.log.name})") from exc

    def recv(self, timeout: float = REPLY_TIMEOUT_S) -> dict:
        """The next reply line; other lines on the child's stdout are passed over."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line, self.buf = self.buf[:nl].decode(errors="replace"), self.buf[nl + 1 :]
                if line.startswith(REPLY):
                    return json.loads(line[len(REPLY) :])
                continue
            left = deadline - time.monotonic()
            with selectors.DefaultSelector() as sel:
                sel.register(fd, selectors.EVENT_READ)
                if left <= 0 or not sel.select(left):
                    raise RuntimeError(f"{self.tag}: no reply within {timeout:.0f} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                status = self.proc.wait()
                raise RuntimeError(f"{self.tag}: exited with status {status}: {self.last_words()}")
            self.buf += chunk

    def last_words(self) -> str:
        """The last line of the child's stderr (its log goes with the work folder)."""
        self.log.flush()
        try:
            lines = [x.strip() for x in Path(self.log.name).read_text(errors="replace").splitlines() if x.strip()]
        except OSError:
            lines = []
        return lines[-1][:300] if lines else "nothing on its stderr"

    def ask(self, op: str, **kw) -> dict:
        self.send(op, **kw)
        return self.recv()

    def close(self, timeout: float = 300.0) -> int:
        """Ask the child to quit and wait for it (Score-P writes its experiment at exit)."""
        try:
            if self.proc.poll() is None:
                self.farewell = self.ask("quit")
            status = self.proc.wait(timeout)
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            status = self.proc.wait()
        self.log.close()
        return status


def child_env(mode: str, run_dir: Path, base: dict) -> dict[str, str]:
    """The environment of one child: ``base`` and, for a Score-P mode, the artifact's Score-P
    variables with the mode's own on top (Score-P's buffer chunk only where the mode names one); the
    bare client's library for its modes; the domain filter preloaded, first, for its modes."""
    from dnabert_scaling.run.tracing.scorep import scorep_environment

    env = dict(base)
    if mode in CUPTI_CLIENT_MODES:
        env[CUPTI_CLIENT_ENV] = str(run_dir.parent / CUPTI_CLIENT_LIB)
    if mode in DOMAIN_FILTER_MODES:
        env["LD_PRELOAD"] = " ".join(x for x in (str(run_dir.parent / DOMAIN_FILTER_LIB), env.get("LD_PRELOAD", "")) if x)
    own = mode_variables(mode)
    if own is not None:
        env.update(scorep_environment(0, run_dir, cuda_enable=own["SCOREP_CUDA_ENABLE"], base_env={}))
        env.pop("SCOREP_CUDA_BUFFER_CHUNK", None)
        env.update(own)
    return env


def child_argv(mode: str, args) -> list[str]:
    argv = [sys.executable]
    if MODES[mode] is not None:
        argv += ["-m", "scorep", "--cuda", "--mpp=none", "--thread=pthread", "--nocompiler", "--noinstrumenter"]
    argv += [str(ENTRY), "--child", mode, "--model", args.model, "--device", args.device]
    argv += ["--warmup", str(args.warmup), "--steps", str(args.steps), "--step-sync", args.step_sync]
    return argv + (["--cpus", args.cpus] if getattr(args, "cpus", None) else [])


def turn_order(modes: list[str], k: int) -> list[str]:
    """The modes in turn ``k``: rotated by one from turn to turn, so no mode always goes first."""
    return [modes[(j + k) % len(modes)] for j in range(len(modes))]


def ask_all(children: dict[str, Child], op: str, **kw) -> dict[str, dict]:
    """The same command to every child at once (set-up work, not timed), then every reply."""
    for c in children.values():
        c.send(op, **kw)
    return {m: c.recv() for m, c in children.items()}


def run_round(rnd: int, modes: list[str], args, work: Path, micro: bool) -> dict:
    """One round: a process per mode, the configurations step by step in turns, then (``micro``)
    the per-call loops in turns. Returns the step times per configuration and mode."""
    children: dict[str, Child] = {}
    row: dict = {"round": rnd, "micro": micro, "steps_ms": {}, **{key: {} for key in STEP_FIGURES.values()}}
    row["per_call"] = {}
    row["processes"] = {}
    pids: dict[str, int] = {}
    try:
        for m in modes:
            children[m] = Child(m, args, work, f"r{rnd}-{m}")
        for m, c in children.items():
            pids[m] = c.recv().get("pid")  # ready
        for cfg in args.config_names:
            ask_all(children, "config", config=cfg)
            times: dict[str, list[float]] = {m: [] for m in modes}
            figures: dict[str, dict[str, list]] = {key: {m: [] for m in modes} for key in STEP_FIGURES}
            for i in range(args.warmup + args.steps):
                for m in turn_order(modes, i + rnd):
                    step = children[m].ask("step", i=i)
                    if i >= args.warmup:
                        times[m].append(step["ms"])
                        for key in STEP_FIGURES:
                            figures[key][m].append(step[key])
            row["steps_ms"][cfg] = times
            for key, name in STEP_FIGURES.items():
                row[name][cfg] = figures[key]
            ask_all(children, "release")
        if micro:
            calls: dict[str, list[dict]] = {m: [] for m in modes}
            for k in range(MICRO_TURNS):
                for m in turn_order(modes, k):
                    calls[m].append(children[m].ask("micro"))
            row["per_call"] = calls
    except RuntimeError as exc:
        row["error"] = str(exc)
    for m, c in children.items():
        status = c.close()
        row["processes"][m] = {"exit_status": status, "wall_s": round(time.monotonic() - c.started, 2), "pid": pids.get(m)}
        for key in ("cupti_records", "domain_filter"):
            if key in c.farewell:
                row["processes"][m][key] = c.farewell[key]
        messages = scorep_messages(Path(c.log.name))
        if messages:
            row["processes"][m]["scorep_messages"] = messages
        if c.exp is not None:
            row["processes"][m]["experiment"] = str(c.exp)
            row["processes"][m]["trace_bytes"] = (
                sum(f.stat().st_size for f in c.exp.rglob("*") if f.is_file()) if c.exp.is_dir() else None
            )
    if any(p["exit_status"] != 0 for p in row["processes"].values()) and "error" not in row:
        row["error"] = "a process exited with a status other than 0: " + json.dumps(row["processes"])
    return row


def scorep_messages(log: Path, keep: int = 30) -> list[str]:
    """Score-P's own lines in a child's stderr (``[Score-P] ...``: dropped or skipped records, buffer
    advice), each once, at most ``keep``: the processes' work folder is removed after the run."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return []
    out: list[str] = []
    for line in lines:
        text = line.strip()
        if text.startswith("[Score-P]") and text not in out:
            out.append(text[:400])
            if len(out) == keep:
                break
    return out
