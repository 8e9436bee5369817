#!/usr/bin/env bash
# Submit the dnabert-scaling world-size sweep to SLURM: one job per world size (all runs of that
# size, in order), chained with --dependency=afterok so that 1 -> 4 -> 8 run one after another.
#
# Simple mode (no Python needed on the login node; the image does the work):
#   scripts/slurm/sweep.sh --config site.conf --image dnabert-scaling.sif \
#       --world-sizes 1,4,8 [--tracers none,scorep] [--repeats 1] --out runs -- [train arguments]
# Prepared mode (used by `dnabert-scaling sweep --executor slurm`):
#   scripts/slurm/sweep.sh [options] --job-dir DIR [--job-dir DIR ...]
#
# Resources (flags override the config file; the config file is KEY=value lines, see
# scripts/slurm/site.conf.example; default file: $DNABERT_SLURM_CONFIG):
#   --config FILE          settings file
#   --partition NAME       (PARTITION)         --account NAME     (ACCOUNT)
#   --time HH:MM:SS        (TIME)              --mem SIZE         (MEM, per node)
#   --gpus-per-node N      (GPUS_PER_NODE; 0 = CPU-only jobs)  --max-nodes N (MAX_NODES)
#   --cpus-per-task N      (CPUS_PER_TASK)     --gres-type TYPE   (GRES_TYPE, e.g. a100)
#   --gpu-bind node|task   (GPU_BIND: node = --gres=gpu:G, every task sees the node's GPUs;
#                           task = --gpus-per-task=1)
#   --sbatch-arg ARG       (SBATCH_ARGS, whitespace-separated) extra sbatch option, repeatable
# How ranks run:
#   --image SIF            (IMAGE) `apptainer exec --nv --cleanenv SIF dnabert-scaling train`
#   --no-container         (NO_CONTAINER=1) run the installed CLI directly (not with --image)
#   --apptainer BIN        (APPTAINER)   --bind SPEC (BIND, comma-separated) --cli PATH (CLI)
#   --pass-env "A B"       (PASS_ENV) further variables passed into the image
#   --command CMD          testing: run CMD per rank instead of train (see dnabert-job.sbatch)
# Other:
#   --after JOBID          make the first job depend on JOBID too
#   --job-name-prefix P    (JOB_NAME_PREFIX, default dnabert-) job names are P + ws<N>
#   --dry-run              print the sbatch commands; query, write and submit nothing
#   --test-only            validate and ask SLURM (sbatch --test-only) whether each job fits;
#                          write and submit nothing
# Before anything is written or submitted everything is checked: the options (numbers are
# decimal, 08 is 8; no world size or tracer twice; no --out or --tracer after --, the sweep sets
# them; --out a folder, not a link, outside the source tree's expected/, new, empty or a sweep's own), the
# settings file (UTF-8, each key once, quotes closed), the partition exists, each world size fits
# (nodes = ceil(N / GPUS_PER_NODE) within MAX_NODES and the partition; GPUS_PER_NODE within the partition's nodes'
# GRES), the image exists, no earlier job of a job directory is still pending or running, and
# `sbatch --test-only` accepts every job. Simple mode then writes its job directories
# (OUT/slurm/ws<N>: world_size, run-NNN.args, run-NNN.rundir) and submits.
# Output: one line per job ("ws=N job=ID log=..."); JOB_DIR/jobid holds the job id.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JOB_SCRIPT="$HERE/dnabert-job.sbatch"
RANK_SCRIPT="$HERE/dnabert-rank.sh"
KNOWN_KEYS="PARTITION ACCOUNT TIME GPUS_PER_NODE MAX_NODES CPUS_PER_TASK MEM GRES_TYPE GPU_BIND IMAGE NO_CONTAINER APPTAINER BIND CLI SBATCH_ARGS PASS_ENV JOB_NAME_PREFIX"

die() {
    echo "sweep.sh: error: $*" >&2
    exit 2
}

usage() {
    sed -n '2,41p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# --- the command line ------------------------------------------------------------------------
config="${DNABERT_SLURM_CONFIG:-}"
REPEATS_MAX=1000         # runs per world size and tracer at most (run.sweep.driver.REPEATS_MAX)
declare -A F=()          # settings given as flags (override the config file)
extra_sbatch=() binds=() job_dirs=() train_args=()
world_sizes="" tracers="" repeats="" out="" after="" mode=submit command=""
while [ $# -gt 0 ]; do
    case "$1" in  # an option that takes a value: one must follow, and not an empty one (but --pass-env's)
        --config|--partition|--account|--time|--mem|--gpus-per-node|--max-nodes|--cpus-per-task|--gres-type|\
        --gpu-bind|--image|--apptainer|--bind|--cli|--pass-env|--job-name-prefix|--sbatch-arg|--command|--after|\
        --job-dir|--world-sizes|--tracers|--repeats|--out)
            [ $# -ge 2 ] || die "$1 needs a value"
            [ -n "$2" ] || [ "$1" = --pass-env ] || die "$1 needs a value, not an empty one" ;;
    esac
    case "$1" in
        --config) config="${2:?--config needs a file}"; shift 2 ;;
        --partition) F[PARTITION]="${2:?}"; shift 2 ;;
        --account) F[ACCOUNT]="${2:?}"; shift 2 ;;
        --time) F[TIME]="${2:?}"; shift 2 ;;
        --mem) F[MEM]="${2:?}"; shift 2 ;;
        --gpus-per-node) F[GPUS_PER_NODE]="${2:?}"; shift 2 ;;
        --max-nodes) F[MAX_NODES]="${2:?}"; shift 2 ;;
        --cpus-per-task) F[CPUS_PER_TASK]="${2:?}"; shift 2 ;;
        --gres-type) F[GRES_TYPE]="${2:?}"; shift 2 ;;
        --gpu-bind) F[GPU_BIND]="${2:?}"; shift 2 ;;
        --image) F[IMAGE]="${2:?}"; shift 2 ;;
        --no-container) F[NO_CONTAINER]=1; shift ;;
        --apptainer) F[APPTAINER]="${2:?}"; shift 2 ;;
        --bind) binds+=("${2:?}"); shift 2 ;;
        --cli) F[CLI]="${2:?}"; shift 2 ;;
        --pass-env) F[PASS_ENV]="${2?}"; shift 2 ;;
        --job-name-prefix) F[JOB_NAME_PREFIX]="${2:?}"; shift 2 ;;
        --sbatch-arg) extra_sbatch+=("${2:?}"); shift 2 ;;
        --sbatch-arg=*) extra_sbatch+=("${1#--sbatch-arg=}"); shift ;;
        --command) command="${2:?--command needs a shell command}"; shift 2 ;;
        --after) after="${2:?--after needs a job id}"; shift 2 ;;
        --job-dir) job_dirs+=("${2:?--job-dir needs a directory}"); shift 2 ;;
        --world-sizes) world_sizes="${2:?--world-sizes needs a list like 1,4,8}"; shift 2 ;;
        --tracers) tracers="${2:?--tracers needs a list like none,scorep}"; shift 2 ;;
        --repeats) repeats="${2:?--repeats needs a number}"; shift 2 ;;
        --out) out="${2:?--out needs a directory}"; shift 2 ;;
        --dry-run) mode=dry-run; shift ;;
        --test-only) mode=test-only; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; train_args=("$@"); break ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done

# decimal NAME VALUE MIN WHAT: NAME=VALUE as plain decimal digits (leading zeros dropped: 08 is 8,
# never octal as in $(( ))), or an error naming WHAT when VALUE is not ASCII digits, is below MIN
# (0 or 1) or has more than 9 digits (shell arithmetic and `[ -gt ]` must be able to hold it).
decimal() {
    local v="$2" need="a non-negative integer"
    [ "$3" = 0 ] || need="a positive integer"
    case "$v" in ''|*[!0123456789]*) die "$4: '$2' is not $need" ;; esac
    v="${v#"${v%%[!0]*}"}"
    [ "${#v}" -le 9 ] || die "$4: '$2' is too large (at most 999999999)"
    v="${v:-0}"
    [ "$v" -ge "$3" ] || die "$4: '$2' is not $need"
    printf -v "$1" '%s' "$v"
}
# is_uint VALUE: VALUE is a number as SLURM prints one (plain decimal digits, no leading zero)
is_uint() { [[ "$1" =~ ^(0|[123456789][0123456789]{0,17})$ ]]; }

# --- the config file: KEY=value lines (the same rules as dnabert_scaling.run.slurm.load_config) ----
declare -A C=() C_LINE=()
if [ -n "$config" ]; then
    [ -e "$config" ] || die "config file '$config' not found"
    [ -f "$config" ] || die "config file '$config' is not a regular file"
    [ -r "$config" ] || die "config file '$config' is not readable"
    if command -v iconv >/dev/null && ! iconv -f UTF-8 -t UTF-8 "$config" >/dev/null 2>&1; then
        die "$config: not UTF-8 text, so not a settings file"
    fi
    lineno=0
    while IFS= read -r line || [ -n "$line" ]; do
        lineno=$((lineno + 1))
        line="${line#"${line%%[![:space:]]*}"}"
        line="${line%"${line##*[![:space:]]}"}"
        case "$line" in ''|'#'*) continue ;; esac
        [[ "$line" =~ ^[A-Z_][A-Z0-9_]*= ]] || die "$config:$lineno: expected KEY=value, got '$line'"
        key="${line%%=*}"
        value="${line#*=}"
        case " $KNOWN_KEYS " in
            *" $key "*) ;;
            *) die "$config:$lineno: unknown setting '$key' (known: $KNOWN_KEYS)" ;;
        esac
        [ -z "${C_LINE[$key]:-}" ] || die "$config:$lineno: $key is given twice (first on line ${C_LINE[$key]}): give it once"
        case "$value" in
            \"*|\'*)  # quoted: up to the same quote, then at most a # comment
                q="${value:0:1}" rest="${value:1}"
                case "$rest" in *"$q"*) ;; *) die "$config:$lineno: $key: the quote $q is not closed: '$value'" ;; esac
                after_q="${rest#*"$q"}"
                after_q="${after_q#"${after_q%%[![:space:]]*}"}"
                case "$after_q" in ''|'#'*) ;; *) die "$config:$lineno: $key: text after the closing quote: '$value' (only a # comment may follow)" ;; esac
                value="${rest%%"$q"*}" ;;
            *)
                value="${value%%[[:space:]]#*}"
                value="${value%"${value##*[![:space:]]}"}" ;;
        esac
        C[$key]="$value" C_LINE[$key]="$lineno"
    done <"$config"
    case "${C[NO_CONTAINER]:-}" in
        1|[Tt][Rr][Uu][Ee]|[Yy][Ee][Ss])
            [ -z "${C[IMAGE]:-}" ] || die "$config: IMAGE (line ${C_LINE[IMAGE]}) and NO_CONTAINER (line ${C_LINE[NO_CONTAINER]}) exclude each other: give one (an option given on the command line overrides either)" ;;
    esac
fi

setting() {  # setting KEY DEFAULT: the flag, else the config file, else DEFAULT
    if [ -n "${F[$1]+x}" ]; then
        printf '%s' "${F[$1]}"
    elif [ -n "${C[$1]+x}" ] && [ -n "${C[$1]}" ]; then
        printf '%s' "${C[$1]}"
    else
        printf '%s' "$2"
    fi
}
where() {  # where KEY FLAG: name the source of a setting in error messages
    if [ -n "${F[$1]+x}" ]; then echo "$2"; elif [ -n "${C[$1]+x}" ]; then echo "$1 in $config"; else echo "$2"; fi
}

partition="$(setting PARTITION "")"
account="$(setting ACCOUNT "")"
time_limit="$(setting TIME "")"
mem="$(setting MEM "")"
gpn="$(setting GPUS_PER_NODE 4)"
max_nodes="$(setting MAX_NODES "")"
cpt="$(setting CPUS_PER_TASK "")"
gres_type="$(setting GRES_TYPE "")"
gpu_bind="$(setting GPU_BIND node)"
image="$(setting IMAGE "")"
no_container="$(setting NO_CONTAINER 0)"
apptainer="$(setting APPTAINER apptainer)"
cli="$(setting CLI "")"
pass_env="$(setting PASS_ENV "")"
prefix="$(setting JOB_NAME_PREFIX dnabert-)"
if [ -n "${C[BIND]:-}" ]; then
    IFS=',' read -r -a cfg_binds <<<"${C[BIND]}"
    binds=("${cfg_binds[@]}" "${binds[@]}")
fi
if [ -n "${C[SBATCH_ARGS]:-}" ]; then
    read -r -a cfg_sbatch <<<"${C[SBATCH_ARGS]}"
    extra_sbatch=("${cfg_sbatch[@]}" "${extra_sbatch[@]}")
fi

decimal gpn "$gpn" 0 "$(where GPUS_PER_NODE --gpus-per-node)"
[ -z "$max_nodes" ] || decimal max_nodes "$max_nodes" 1 "$(where MAX_NODES --max-nodes)"
[ -z "$cpt" ] || decimal cpt "$cpt" 1 "$(where CPUS_PER_TASK --cpus-per-task)"
case "$gpu_bind" in node|task) ;; *) die "$(where GPU_BIND --gpu-bind): must be node or task, not '$gpu_bind'" ;; esac
case "${no_container,,}" in
    1|true|yes) no_container=1 ;;
    0|false|no) no_container=0 ;;
    *) die "$(where NO_CONTAINER --no-container): must be 0 or 1, not '$no_container'" ;;
esac
if [ -n "${F[IMAGE]+x}" ]; then
    [ -z "${F[NO_CONTAINER]+x}" ] || die "--image and --no-container exclude each other: give one"
    no_container=0  # --image overrides the config file's NO_CONTAINER=1
fi
if [ "$no_container" -eq 1 ]; then
    image=""  # --no-container overrides the config file's IMAGE
else
    [ -n "$image" ] || die "no image: give --image SIF (IMAGE in the config file) or --no-container"
    [ -f "$image" ] || die "$(where IMAGE --image): image '$image' does not exist (build it with containers/build.sh)"
    image="$(cd "$(dirname "$image")" && pwd)/$(basename "$image")"
fi

# foreign_entries DIR: the names directly in DIR (none when it does not exist) that a sweep does not write
# there, in the array foreign: the rule of dnabert_scaling.run.folders.sweep_entry at the top level (run
# folders ws<N>-<tracer>-r<k>[-<variant>] and failed attempts set aside, sweep.json of the sweep's schema,
# bus-bandwidth results and logs, the Score-P preflight, the shared synthetic data, the SLURM job root
# slurm/, and the temporary files of their writers), so that a foreign folder is refused, never written into.
foreign_entries() {
    local p name run_re='^ws[0-9]+-(none|torch|scorep)-r[0-9]+(-[a-z0-9]+)?(\.failed-[0-9]{8}-[0-9]{6}(-[0-9]+)?)?$'
    foreign=()
    [ -d "$1" ] || return 0
    for p in "$1"/* "$1"/.[!.]* "$1"/..?*; do
        [ -e "$p" ] || [ -L "$p" ] || continue  # an unmatched pattern
        name="${p##*/}"
        if [ -L "$p" ]; then
            :
        elif [ -d "$p" ]; then
            [[ "$name" =~ $run_re ]] && continue
            case "$name" in slurm|synthetic-data) continue ;; esac
        elif [ -f "$p" ]; then
            case "$name" in
                sweep.json) grep -Eq '"schema"[[:space:]]*:[[:space:]]*"dnabert-scaling/sweep/1"' "$p" && continue ;;
                scorep-preflight.json|scorep-preflight.json.lock|.write-test-*) continue ;;
                .sweep.json.*.partial|.scorep-preflight.json.*.partial) continue ;;
            esac
            [[ "$name" =~ ^busbw-ws[0-9]+\.(json|log)$|^\.busbw-ws[0-9]+\.json\..*\.partial$ ]] && continue
        fi
        foreign+=("$name")
    done
}
shown_names() {  # shown_names NAME...: the first five, and how many more (outputs.shown_names)
    local shown
    shown="$(printf '%s, ' "${@:1:5}")"
    shown="${shown%, }"
    [ "$#" -le 5 ] || shown="$shown and $(($# - 5)) more"
    printf '%s' "$shown"
}

# --- the jobs: checked here, written only after the cluster accepted them ------------------------
declare -a worlds=() nodes_of=() sizes=() tracer_list=()
if [ -n "$world_sizes" ]; then  # simple mode: job directories <out>/slurm/ws<N>
    [ "${#job_dirs[@]}" -eq 0 ] || die "--world-sizes and --job-dir exclude each other"
    [ -n "$out" ] || die "--world-sizes needs --out DIR (where the run directories go)"
    decimal repeats "${repeats:-1}" 1 --repeats
    [ "$repeats" -le "$REPEATS_MAX" ] || die "--repeats: '$repeats' is more than $REPEATS_MAX runs per world size and tracer"
    declare -A seen=()
    IFS=',' read -r -a items <<<"$world_sizes,"  # the extra comma keeps a trailing empty item
    for item in "${items[@]}"; do
        decimal n "$item" 1 --world-sizes
        [ -z "${seen[ws$n]:-}" ] || die "--world-sizes lists world size $n twice ('$world_sizes'): each world size is one job"
        seen[ws$n]=1
        sizes+=("$n")
    done
    IFS=',' read -r -a items <<<"${tracers:-none},"
    for tracer in "${items[@]}"; do
        case "$tracer" in none|torch|scorep|auto) ;; *) die "--tracers: unknown tracer '$tracer' (none, torch, scorep, auto)" ;; esac
        [ -z "${seen[tr$tracer]:-}" ] || die "--tracers lists '$tracer' twice ('$tracers'): its runs would share their run directories"
        seen[tr$tracer]=1
        tracer_list+=("$tracer")
    done
    for a in "${train_args[@]}"; do
        case "$a" in
            --out|--out=*|--ou|--ou=*) die "--out is set by the sweep for each run; leave it out of the train options (after --)" ;;
            --tracer|--tracer=*) die "--tracer is set by the sweep for each run (--tracers); leave it out of the train options (after --)" ;;
        esac
    done
    # the path as pathlib reads it (sweep's): no trailing '/' or '/.', which would make the tests below follow a link
    while [ "${#out}" -gt 1 ] && [[ "$out" == */ || "$out" == */. ]]; do
        case "$out" in */) out="${out%/}" ;; *) out="${out%/.}" ;; esac
    done
    out="${out:-/}"
    # a link: the runs would land where the command line does not name (outputs.refuse_link, as sweep refuses it)
    [ ! -L "$out" ] || die "--out '$out' is a symbolic link; give the folder it points to"
    if [ -e "$out" ]; then
        [ -d "$out" ] || die "--out '$out' exists and is not a folder"
    fi
    parent="$out"
    while [ ! -e "$parent" ]; do parent="$(dirname "$parent")"; done
    [ -d "$parent" ] || die "--out '$out': '$parent' is not a folder"
    { [ -w "$parent" ] && [ -x "$parent" ]; } || die "--out '$out': '$parent' is not writable"
    command -v realpath >/dev/null || die "'realpath' (GNU coreutils) not found: it is needed to resolve --out"
    out="$(realpath -m -- "$out")"
    shipped="$(realpath -m -- "$HERE/../../expected")"
    case "$out/" in
        "$shipped"/*) die "--out '$out' lies inside the shipped evidence $shipped (tracked files, which only make refresh-reference replaces): give --out elsewhere" ;;
    esac
    foreign_entries "$out"
    [ "${#foreign[@]}" -eq 0 ] || die "--out '$out' holds files a sweep does not write ($(shown_names "${foreign[@]}")): sweep.sh writes only into a new or empty folder or an earlier sweep's; give another --out, or move them away"
    for n in "${sizes[@]}"; do
        job_dirs+=("$out/slurm/ws$n")
        worlds+=("$n")
    done
else  # prepared mode: job directories written by dnabert_scaling.run.slurm
    if [ -n "$out$tracers$repeats" ] || [ "${#train_args[@]}" -gt 0 ]; then
        die "--out, --tracers, --repeats and train options (after --) go with --world-sizes; a --job-dir already holds its runs"
    fi
    [ "${#job_dirs[@]}" -gt 0 ] || die "nothing to submit: give --world-sizes ... --out DIR, or --job-dir DIR"
    for i in "${!job_dirs[@]}"; do
        jd="${job_dirs[$i]}"
        [ -d "$jd" ] || die "job directory '$jd' does not exist"
        job_dirs[i]="$(cd "$jd" && pwd)"
        [ -r "$jd/world_size" ] || die "$jd/world_size is missing"
        n="$(tr -d '[:space:]' <"$jd/world_size")"
        { is_uint "$n" && [ "$n" -ge 1 ]; } || die "$jd/world_size: '$n' is not a positive integer (plain digits, no leading zero)"
        compgen -G "$jd/run-*.args" >/dev/null || die "$jd has no run-*.args files"
        worlds[i]="$n"
    done
fi
for i in "${!worlds[@]}"; do
    n="${worlds[$i]}"
    if [ "$gpn" -gt 0 ]; then
        nodes_of[i]=$(( (n + gpn - 1) / gpn ))
    else
        nodes_of[i]=1
    fi
done

# write_job_dirs: simple mode's job directories (world_size, run-NNN.args, run-NNN.rundir), once
# nothing can refuse the jobs any more; earlier run-* files of a job directory are replaced.
write_job_dirs() {
    local n jd k tracer r run_dir stem
    [ -n "$world_sizes" ] || return 0
    mkdir -p -- "$out" || die "--out '$out': cannot create it"
    for n in "${sizes[@]}"; do
        jd="$out/slurm/ws$n"
        mkdir -p -- "$jd" || die "cannot create the job directory '$jd'"
        rm -f -- "$jd"/run-*.args "$jd"/run-*.rundir
        echo "$n" >"$jd/world_size"
        k=0
        for tracer in "${tracer_list[@]}"; do
            r=0
            while [ "$r" -lt "$repeats" ]; do
                run_dir="$out/ws$n-$tracer-r$r"
                printf -v stem '%s/run-%03d' "$jd" "$k"
                printf '%s\0' "${train_args[@]}" --tracer "$tracer" --out "$run_dir" >"$stem.args"
                echo "$run_dir" >"$stem.rundir"
                k=$((k + 1)) r=$((r + 1))
            done
        done
    done
}

sbatch_cmd() {  # sbatch_cmd INDEX DEPENDENCY: fills the array CMD
    local i="$1" dep="$2" n="${worlds[$1]}" nodes="${nodes_of[$1]}" jd="${job_dirs[$1]}" per_node gres
    CMD=(sbatch --parsable --job-name="${prefix}ws$n" --output="$jd/slurm-%j.out"
         --ntasks="$n" --nodes="$nodes" --kill-on-invalid-dep=yes)
    [ -z "$partition" ] || CMD+=(--partition="$partition")
    [ -z "$account" ] || CMD+=(--account="$account")
    [ -z "$time_limit" ] || CMD+=(--time="$time_limit")
    [ -z "$mem" ] || CMD+=(--mem="$mem")
    [ -z "$cpt" ] || CMD+=(--cpus-per-task="$cpt")
    if [ "$gpn" -gt 0 ]; then
        per_node=$(( n < gpn ? n : gpn ))
        CMD+=(--ntasks-per-node="$per_node")
        gres="gpu${gres_type:+:$gres_type}"
        if [ "$gpu_bind" = node ]; then
            CMD+=(--gres="$gres:$per_node")
        else
            CMD+=(--gpus-per-task="${gres_type:+$gres_type:}1")
        fi
    fi
    [ -z "$dep" ] || CMD+=(--dependency="afterok:$dep")
    CMD+=("${extra_sbatch[@]}")
    CMD+=("$JOB_SCRIPT" --rank-script "$RANK_SCRIPT" --gpu-bind "$gpu_bind")
    if [ -n "$image" ]; then
        CMD+=(--image "$image" --apptainer "$apptainer")
    else
        CMD+=(--no-container)
    fi
    [ -z "$cli" ] || CMD+=(--cli "$cli")
    [ -z "$pass_env" ] || CMD+=(--pass-env "$pass_env")
    local b
    for b in "${binds[@]}"; do
        CMD+=(--bind "$b")
    done
    [ -z "$command" ] || CMD+=(--command "$command")
    CMD+=("$jd")
}

if [ "$mode" = dry-run ]; then
    prev="$after"
    for i in "${!job_dirs[@]}"; do
        sbatch_cmd "$i" "${prev:+$prev}"
        printf '%q ' "${CMD[@]}"
        echo
        prev="<job of ws${worlds[$i]}>"
    done
    exit 0
fi

# --- validation: nothing is submitted unless every job passes -----------------------------------
for tool in sbatch scontrol sinfo; do
    command -v "$tool" >/dev/null || die "'$tool' not found: the SLURM client commands are needed on this host"
done
scontrol ping >/dev/null 2>&1 || die "the SLURM controller does not answer (scontrol ping)"
if [ -n "$partition" ]; then
    part_line="$(scontrol show partition -o "$partition" 2>/dev/null || true)"
    if [ -z "$part_line" ] || ! [[ "$part_line" == PartitionName=* ]]; then
        known="$(sinfo -h -o '%R' 2>/dev/null | sort -u | tr '\n' ' ')"
        die "$(where PARTITION --partition): partition '$partition' does not exist on this cluster (partitions: ${known:-none})"
    fi
else
    part_line="$(scontrol show partition -o 2>/dev/null | grep -m 1 ' Default=YES ' || true)"
fi
field() {  # field NAME LINE: value of NAME=... in a `scontrol -o` line (empty when absent)
    local line=" $2" key=" $1="
    case "$line" in *"$key"*) ;; *) return 0 ;; esac
    local rest="${line#*"$key"}"
    printf '%s' "${rest%% *}"
}
part_name="$(field PartitionName "$part_line")"
part_total_nodes="$(field TotalNodes "$part_line")"
part_max_nodes="$(field MaxNodes "$part_line")"
part_nodes="$(field Nodes "$part_line")"

# The most GPUs of one node of the partition (its nodes' Gres=gpu[:type]:N entries).
node_gpus=0
if [ -n "$part_nodes" ] && [ "$gpn" -gt 0 ]; then
    while IFS= read -r node_line; do
        gres_field="$(field Gres "$node_line")"
        count=0
        IFS=',' read -r -a items <<<"$gres_field"
        for item in "${items[@]}"; do
            item="${item%%(*}"
            case "$item" in
                gpu:*)
                    c="${item##*:}"
                    if [ -n "$gres_type" ] && [ "$item" != "gpu:$gres_type:$c" ]; then c=0; fi
                    is_uint "$c" && count=$((count + c)) ;;
            esac
        done
        [ "$count" -le "$node_gpus" ] || node_gpus="$count"
    done < <(if [ "$part_nodes" = ALL ]; then scontrol show node -o; else scontrol show node -o "$part_nodes"; fi 2>/dev/null || true)
fi

for i in "${!job_dirs[@]}"; do
    n="${worlds[$i]}" nodes="${nodes_of[$i]}"
    what="world size $n"
    [ "$gpn" -eq 0 ] || what="$what ($nodes node(s) x $gpn GPU(s))"
    if [ -n "$max_nodes" ] && [ "$nodes" -gt "$max_nodes" ]; then
        die "$what needs $nodes nodes, more than $(where MAX_NODES --max-nodes)=$max_nodes allows: at most $((max_nodes * gpn)) ranks"
    fi
    if is_uint "$part_total_nodes" && [ "$nodes" -gt "$part_total_nodes" ]; then
        die "$what needs $nodes nodes but partition '${part_name:-default}' has $part_total_nodes"
    fi
    if is_uint "$part_max_nodes" && [ "$nodes" -gt "$part_max_nodes" ]; then
        die "$what needs $nodes nodes but partition '${part_name:-default}' allows at most MaxNodes=$part_max_nodes per job"
    fi
    if [ "$gpn" -gt 0 ] && [ "$gpn" -gt "$node_gpus" ] && [ "$(( n < gpn ? n : gpn ))" -gt "$node_gpus" ]; then
        die "$what: $(where GPUS_PER_NODE --gpus-per-node)=$gpn but the nodes of partition '${part_name:-default}' have at most $node_gpus GPU(s)${gres_type:+ of type $gres_type} (GRES)"
    fi
done

for i in "${!job_dirs[@]}"; do
    old_id="$(cat "${job_dirs[$i]}/jobid" 2>/dev/null || true)"
    if [ -n "$old_id" ]; then
        old_state="$(scontrol show job -o "$old_id" 2>/dev/null | sed -n 's/.* JobState=\([A-Z_]*\).*/\1/p' || true)"
        case "$old_state" in
            PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|REQUEUED|RESIZING)
                die "job $old_id of ${job_dirs[$i]} is still $old_state: wait for it or scancel it before resubmitting" ;;
        esac
    fi
done

for i in "${!job_dirs[@]}"; do
    sbatch_cmd "$i" ""
    CMD=("${CMD[@]/#--parsable/--test-only}")
    if ! msg="$("${CMD[@]}" 2>&1)"; then
        die "world size ${worlds[$i]}: SLURM would not accept the job (sbatch --test-only): $(echo "$msg" | tr '\n' ' ')"
    fi
done
if [ "$mode" = test-only ]; then
    echo "sweep.sh: ${#job_dirs[@]} job(s) would be accepted; nothing submitted or written"
    exit 0
fi

# --- submission: the job directories are written only now -------------------------------------
write_job_dirs
prev="$after"
submitted=()
for i in "${!job_dirs[@]}"; do
    sbatch_cmd "$i" "$prev"
    if ! out_id="$("${CMD[@]}" 2>&1)"; then
        die "sbatch failed for world size ${worlds[$i]}: $out_id${submitted[*]:+ (already submitted: ${submitted[*]})}"
    fi
    job_id="${out_id%%;*}"
    job_id="$(echo "$job_id" | tail -n 1 | tr -d '[:space:]')"
    is_uint "$job_id" || die "sbatch printed '$out_id', not a job id"
    echo "$job_id" >"${job_dirs[$i]}/jobid"
    submitted+=("$job_id")
    echo "ws=${worlds[$i]} job=$job_id log=${job_dirs[$i]}/slurm-$job_id.out"
    prev="$job_id"
done
echo "sweep.sh: submitted ${#submitted[@]} job(s): squeue -j $(IFS=,; echo "${submitted[*]}")"
