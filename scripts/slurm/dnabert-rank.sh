#!/usr/bin/env bash
# One rank of a dnabert-scaling run: started by `srun` from dnabert-job.sbatch, once per task.
#
#   dnabert-rank.sh ARGS_FILE
#
# ARGS_FILE holds the arguments of `dnabert-scaling train`, NUL-separated (written by the sweep).
# The rank comes from SLURM: `train` reads SLURM_PROCID, SLURM_LOCALID and SLURM_NTASKS itself
# (dnabert_scaling.run.train.distributed); a --command payload gets RANK, LOCAL_RANK and WORLD_SIZE derived
# from them. MASTER_ADDR (first host of the job) and MASTER_PORT come from the batch script. What runs is chosen by variables that
# the batch script sets:
#   DNABERT_SLURM_IMAGE      the .sif image: `apptainer exec --nv --cleanenv IMAGE dnabert-scaling train ...`
#   DNABERT_SLURM_APPTAINER  the apptainer (or singularity) binary (default apptainer)
#   DNABERT_SLURM_BINDS      comma-separated bind specifications (the run directories' parents)
#   DNABERT_SLURM_CLI        without an image: the installed CLI (default dnabert-scaling on PATH)
#   DNABERT_SLURM_COMMAND    testing: a shell command run instead of train (the train arguments
#                            are its "$@"), inside the image when there is one
#   DNABERT_SLURM_PASS_ENV   space-separated names of further variables to pass into the image
#                            (NCCL_* and SCOREP_* are passed anyway)
set -euo pipefail

die() {
    echo "dnabert-rank.sh: error: $*" >&2
    exit 2
}

[ $# -eq 1 ] || die "usage: dnabert-rank.sh ARGS_FILE"
args_file="$1"
[ -r "$args_file" ] || die "arguments file '$args_file' is not readable"
for v in SLURM_PROCID SLURM_LOCALID SLURM_NTASKS MASTER_ADDR MASTER_PORT; do
    [ -n "${!v:-}" ] || die "$v is not set: start this script with srun from dnabert-job.sbatch"
done

train_args=()
mapfile -d '' -t train_args <"$args_file"

image="${DNABERT_SLURM_IMAGE:-}"
payload="${DNABERT_SLURM_COMMAND:-}"
export MASTER_ADDR MASTER_PORT
export TMPDIR="${TMPDIR:-/tmp}"
if [ -n "$payload" ]; then
    # A test payload gets the torchrun-style variables, derived from SLURM's.
    export RANK="$SLURM_PROCID"
    export LOCAL_RANK="$SLURM_LOCALID"
    export WORLD_SIZE="$SLURM_NTASKS"
    export LOCAL_WORLD_SIZE="${SLURM_NTASKS_PER_NODE:-$SLURM_NTASKS}"
else
    # `train` reads SLURM_PROCID / SLURM_LOCALID / SLURM_NTASKS itself (and records the launcher
    # as slurm); stale torchrun variables inherited from the submitting shell must not win.
    unset RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE
fi

if [ -z "$image" ]; then
    if [ -n "$payload" ]; then
        exec bash -c "$payload" dnabert-payload "${train_args[@]}"
    fi
    cli="${DNABERT_SLURM_CLI:-dnabert-scaling}"
    command -v "$cli" >/dev/null || die "CLI '$cli' not found on $(hostname) (install the project, or give the image)"
    exec "$cli" train "${train_args[@]}"
fi

apptainer="${DNABERT_SLURM_APPTAINER:-apptainer}"
command -v "$apptainer" >/dev/null || die "'$apptainer' not found on $(hostname): load the Apptainer module or use --no-container"
[ -r "$image" ] || die "image '$image' is not readable on $(hostname)"

# --cleanenv drops the host environment: pass what the rank needs explicitly.
pass=(RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT TMPDIR
      CUDA_VISIBLE_DEVICES SLURM_JOB_ID SLURM_PROCID SLURM_LOCALID SLURM_NTASKS SLURM_NODEID
      SLURM_JOB_NODELIST SLURM_NTASKS_PER_NODE)
read -r -a extra <<<"${DNABERT_SLURM_PASS_ENV:-}"
pass+=("${extra[@]}")
# The site's NCCL_* settings (interfaces, IB HCAs) and the user's SCOREP_* settings (buffer
# sizes, filters) are needed inside the image too.
while IFS='=' read -r name _; do
    case "$name" in NCCL_*|SCOREP_*) pass+=("$name") ;; esac
done < <(env)

env_opts=()
for name in "${pass[@]}"; do
    if [ -n "${!name+x}" ]; then
        env_opts+=(--env "$name=${!name}")
    fi
done
bind_opts=()
if [ -n "${DNABERT_SLURM_BINDS:-}" ]; then
    bind_opts+=(--bind "$DNABERT_SLURM_BINDS")
fi
if [ "$TMPDIR" != /tmp ] && [ -d "$TMPDIR" ]; then
    bind_opts+=(--bind "$TMPDIR")
fi

if [ -n "$payload" ]; then
    exec "$apptainer" exec --nv --cleanenv "${bind_opts[@]}" "${env_opts[@]}" "$image" \
        bash -c "$payload" dnabert-payload "${train_args[@]}"
fi
exec "$apptainer" exec --nv --cleanenv "${bind_opts[@]}" "${env_opts[@]}" "$image" \
    dnabert-scaling train "${train_args[@]}"
