"""bench_trace.py's tracer modes and the settings every part of the benchmark shares: what each mode
sets, the CUPTI client's modes, the per-step and per-call figures, the child's reply prefix."""

from __future__ import annotations

from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
ENTRY = SCRIPTS / "bench_trace.py"  # the entry point, which each child process runs with --child MODE

SCOREP_ENABLE = "driver,kernel,memcpy,references"
# mode: (SCOREP_CUDA_ENABLE, SCOREP_CUDA_DRIVER_CALLBACKS, other Score-P variables); None: not under Score-P
MODES: dict[str, tuple[str, str, dict[str, str]] | None] = {
    "untraced": None,
    "torch": None,
    "scorep-all": (SCOREP_ENABLE, "all", {}),
    "scorep-launch": (SCOREP_ENABLE, "launch", {}),
    "scorep-nodriver": ("kernel,memcpy", "all", {}),
    "scorep-launch-chunk4m": (SCOREP_ENABLE, "launch", {"SCOREP_CUDA_BUFFER_CHUNK": "4M"}),  # the artifact's default
    "scorep-nodriver-chunk4m": ("kernel,memcpy", "all", {"SCOREP_CUDA_BUFFER_CHUNK": "4M"}),
    # the modes below (and scorep-nodriver) run only where --modes names them
    "scorep-nocuda": ("no", "all", {}),
    "cupti-kernels": None,
    "cupti-kernels-8k": None,
    "cupti-launch": None,
    "cupti-launch-domains": None,
    "cupti-launch-records": None,
    # cupti-kernels with one of CUPTI's own settings changed from its default: whether CUPTI's cost itself, the
    # floor of any tracer built on it, moves with where CUPTI keeps its profiling data (page-locked host memory
    # instead of device memory) or with one stream of activity buffers for all threads instead of one per thread
    "cupti-kernels-pinned": None,
    "cupti-kernels-shared": None,
    # the default mode with Score-P's TSC timer instead of the artifact's clock_gettime: whether reading the
    # clock is part of what a launch record costs on this machine (see scripts/clock_cost.c)
    "scorep-launch-chunk4m-tsc": (SCOREP_ENABLE, "launch", {"SCOREP_CUDA_BUFFER_CHUNK": "4M", "SCOREP_TIMER": "tsc"}),
    # the default mode without `references` (its launch records carry no stream reference), and the default
    # mode with Score-P's tracing off (its CUDA callbacks run and CUPTI's records are taken, nothing is
    # written): what each part of a launch record costs beyond the bare client with the same callbacks
    "scorep-launch-norefs-chunk4m": ("driver,kernel,memcpy", "launch", {"SCOREP_CUDA_BUFFER_CHUNK": "4M"}),
    "scorep-launch-notrace-chunk4m": (
        SCOREP_ENABLE,
        "launch",
        {"SCOREP_CUDA_BUFFER_CHUNK": "4M", "SCOREP_ENABLE_TRACING": "false"},
    ),
    "scorep-launch-nocache-chunk4m": (
        SCOREP_ENABLE,
        "launch",
        {"SCOREP_CUDA_BUFFER_CHUNK": "4M", "SCOREP_CUDA_STREAM_REF_CACHE": "false"},
    ),
    # the default mode with CUPTI's synchronisation callback domain held back by the preloaded
    # scripts/cupti_domain_filter.c (Score-P then drains CUPTI's buffers only at its end): what that
    # domain costs Score-P, beside the bare client with and without it (cupti-launch-domains, cupti-launch)
    "scorep-launch-nosync-chunk4m": (SCOREP_ENABLE, "launch", {"SCOREP_CUDA_BUFFER_CHUNK": "4M"}),
    # the same launch, copy and memset calls taken from CUPTI's activity records, no callback on the launch
    # path (8.4-cupti-launch-records.patch): whether Score-P then costs what the bare client with the same
    # records costs (cupti-launch-records)
    "scorep-records-chunk4m": (SCOREP_ENABLE, "records", {"SCOREP_CUDA_BUFFER_CHUNK": "4M"}),
}
# Score-P modes that need a patch in the installed Score-P: mode -> the patch (share/scorep-patches.txt)
MODE_NEEDS_PATCH = {
    "scorep-launch-nocache-chunk4m": "8.4-cupti-stream-ref-cache.patch",
    "scorep-records-chunk4m": "8.4-cupti-launch-records.patch",
}
# not under Score-P: the bare CUPTI client of bench_trace_cupti.c, with the bytes of its activity buffers
CUPTI_CLIENT_MODES = {
    "cupti-kernels": 4 << 20,
    "cupti-kernels-8k": 8 << 10,
    "cupti-launch": 4 << 20,
    "cupti-launch-domains": 4 << 20,
    "cupti-launch-records": 4 << 20,
    "cupti-kernels-pinned": 4 << 20,
    "cupti-kernels-shared": 4 << 20,
}
# the client's options per mode (bench_cupti_start's flags): 1 the launch callbacks, 2 with them the
# resource and synchronisation callback domains Score-P enables, 4 instead of callbacks CUPTI's activity
# records of the same driver calls (each with the correlation id of its kernel's record), 8 CUPTI's profiling
# data in page-locked host memory, 16 one stream of activity buffers for all threads
CUPTI_CLIENT_OPTIONS = {
    "cupti-launch": 1,
    "cupti-launch-domains": 1 | 2,
    "cupti-launch-records": 4,
    "cupti-kernels-pinned": 8,
    "cupti-kernels-shared": 16,
}
CUPTI_LAUNCH_MODES = tuple(m for m, o in CUPTI_CLIENT_OPTIONS.items() if o & 1)  # the modes that take the launch callbacks
CUPTI_CLIENT_ENV = "BENCH_TRACE_CUPTI_CLIENT"  # the built client library, for a child of such a mode
CUPTI_CLIENT_LIB = "libbench_trace_cupti.so"  # built in the run's work folder
CUPTI_COUNT_KEYS = (
    "kernels",
    "memcpys",
    "other_records",
    "buffers",
    "dropped",
    "buffers_not_given",
    "driver_callbacks",
    "domain_callbacks",
    "launch_records",
    "linked_kernels",  # kernel records whose correlation id a launch record carries
)
# Score-P modes run with scripts/cupti_domain_filter.c preloaded (built in the run's work folder)
DOMAIN_FILTER_MODES = ("scorep-launch-nosync-chunk4m",)
DOMAIN_FILTER_LIB = "libcupti_domain_filter.so"
DOMAIN_FILTER_KEYS = ("held_back", "passed_on")  # cupti_domain_filter_counts, as the child reports them
DEFAULT_MODES = ("untraced", "torch", "scorep-all", "scorep-launch", "scorep-launch-chunk4m", "scorep-nodriver-chunk4m")
RECORDS_DEFAULT = "scorep-records-chunk4m"  # the artifact's default where the installed Score-P has its patch


def default_modes(patches: list[str] | None) -> tuple[str, ...]:
    """The modes `make bench-trace` measures with a Score-P built with ``patches`` (its share/scorep-patches.txt
    names): :data:`DEFAULT_MODES`, and records mode where the install has its patch, so that the run measures
    the default mode it judges, by the artifact's own rule (run/tracing/scorep.py: driver_callbacks_for)."""
    from dnabert_scaling.run.tracing.scorep import driver_callbacks_for

    return DEFAULT_MODES + ((RECORDS_DEFAULT,) if driver_callbacks_for(patches)[0] == "records" else ())


MICRO_QUERIES, MICRO_LAUNCHES, MICRO_TURNS = 2000, 1000, 9
MICRO_FAULT_BYTES = 16 << 20  # the fresh mapping the page-fault loop touches
MICRO_KEYS = ("cuCtxGetDevice_ns", "launch_ns", "page_fault_ns")
# per-step figures beside the time: the child's reply key -> the round's field (per configuration and mode):
# the stepping thread's minor page faults, CPU ms and system (kernel) CPU ms, the process's CPU ms (all threads: PyTorch runs the
# backward pass on a thread of its own), the ms the step waited in its closing synchronisation
STEP_FIGURES = {
    "minflt": "steps_minflt",
    "cpu_ms": "steps_cpu_ms",
    "sys_ms": "steps_sys_ms",
    "proc_cpu_ms": "steps_proc_cpu_ms",
    "sync_ms": "steps_sync_ms",
}
REPLY = "@@bench-trace "  # the prefix of the child's replies on its stdout (other output is passed over)


def parse_configs(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        b, _, s = item.strip().lower().partition("x")
        out.append((int(b), int(s)))
    return out


def mode_variables(mode: str) -> dict[str, str] | None:
    """The Score-P variables a mode sets beyond the artifact's own (None: not under Score-P)."""
    spec = MODES[mode]
    if spec is None:
        return None
    cuda_enable, callbacks, extra = spec
    return {"SCOREP_CUDA_ENABLE": cuda_enable, "SCOREP_CUDA_DRIVER_CALLBACKS": callbacks, **extra}


def mode_settings(modes: list[str]) -> dict[str, dict | None]:
    """Per mode, the Score-P variables it sets beyond the artifact's own (None: not under Score-P)."""
    return {m: mode_variables(m) for m in modes}
