#!/usr/bin/env bash
# Start a one-node SLURM cluster on this machine for the project's tests (munged, slurmctld,
# slurmd), with fake GPUs so that GPU requests can be checked on a machine without GPUs.
#
#   scripts/ci/start-slurm.sh [--cpus N] [--gpus N] [--partition NAME] [--force]
#   scripts/ci/start-slurm.sh --status | --stop | --logs
#
# Needs root and the Debian packages slurmctld, slurmd, slurm-client and munge (.ci/run installs
# them). Idempotent: when the daemons already run with the same configuration it only checks
# them; a changed configuration restarts them with a fresh state. The configuration goes to
# /etc/slurm (where Debian's SLURM looks); an /etc/slurm/slurm.conf that this script did not write
# is never replaced unless --force is given. Daemons are stopped by the PIDs in their pid files.
#
# Environment overrides: DNABERT_CI_SLURM_STATE (state dir, default /var/spool/dnabert-ci),
# DNABERT_CI_SLURM_LOGS (default /var/log/slurm), DNABERT_CI_SLURM_RUN (pid files and fake GPU
# devices, default /run/dnabert-ci), DNABERT_CI_SLURM_CONF_DIR (default /etc/slurm).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MARKER="dnabert-scaling CI cluster"

CPUS=16
GPUS=8
MEM_MB=4000
PARTITION=debug
CLUSTER=dnabert-ci
CTLD_PORT=6817
SLURMD_PORT=6818
FORCE=0
ACTION=start
STATE_DIR="${DNABERT_CI_SLURM_STATE:-/var/spool/dnabert-ci}"
LOG_DIR="${DNABERT_CI_SLURM_LOGS:-/var/log/slurm}"
RUN_DIR="${DNABERT_CI_SLURM_RUN:-/run/dnabert-ci}"
CONF_DIR="${DNABERT_CI_SLURM_CONF_DIR:-/etc/slurm}"
WAIT_S=60

usage() {
    sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

die() {
    echo "start-slurm: error: $*" >&2
    exit 1
}

while [ $# -gt 0 ]; do
    case "$1" in
        --cpus) CPUS="${2:?--cpus needs a number}"; shift 2 ;;
        --gpus) GPUS="${2:?--gpus needs a number}"; shift 2 ;;
        --mem-mb) MEM_MB="${2:?--mem-mb needs a number}"; shift 2 ;;
        --partition) PARTITION="${2:?--partition needs a name}"; shift 2 ;;
        --cluster) CLUSTER="${2:?--cluster needs a name}"; shift 2 ;;
        --wait) WAIT_S="${2:?--wait needs seconds}"; shift 2 ;;
        --force) FORCE=1; shift ;;
        --status) ACTION=status; shift ;;
        --stop) ACTION=stop; shift ;;
        --logs) ACTION=logs; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
done

for v in CPUS GPUS MEM_MB WAIT_S; do
    case "${!v}" in
        ''|*[!0-9]*) die "--$(echo "$v" | tr 'A-Z_' 'a-z-') must be a non-negative integer, not '${!v}'" ;;
    esac
done
[ "$GPUS" -le 64 ] || die "--gpus $GPUS: at most 64 fake GPUs"
[ "$CPUS" -ge 1 ] || die "--cpus must be at least 1"

show_logs() {
    local f
    for f in "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log" /var/log/munge/munged.log; do
        if [ -r "$f" ]; then
            echo "----- last lines of $f -----" >&2
            tail -n 40 "$f" >&2
        else
            echo "----- $f: not there -----" >&2
        fi
    done
}

fail() {
    echo "start-slurm: error: $*" >&2
    show_logs
    exit 1
}

pid_alive() {  # pid_alive PIDFILE
    local pid
    [ -r "$1" ] || return 1
    pid="$(cat "$1" 2>/dev/null || true)"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

stop_daemon() {  # stop_daemon NAME PIDFILE
    local pid i
    if ! pid_alive "$2"; then
        rm -f "$2"
        return 0
    fi
    pid="$(cat "$2")"
    echo "start-slurm: stopping $1 (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "start-slurm: $1 (pid $pid) ignored SIGTERM for 10 s; sending SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$2"
}

munge_ok() {
    command -v munge >/dev/null && munge -n 2>/dev/null | unmunge >/dev/null 2>&1
}

ctld_ok() {
    scontrol ping 2>/dev/null | grep -q "is UP"
}

node_state() {
    sinfo -h -n localhost -o '%T' 2>/dev/null | head -n 1
}

print_status() {
    echo "start-slurm: munge: $(munge_ok && echo ok || echo 'not running')"
    echo "start-slurm: slurmctld: $(pid_alive "$RUN_DIR/slurmctld.pid" && echo "pid $(cat "$RUN_DIR/slurmctld.pid")" || echo 'not running')"
    echo "start-slurm: slurmd: $(pid_alive "$RUN_DIR/slurmd.pid" && echo "pid $(cat "$RUN_DIR/slurmd.pid")" || echo 'not running')"
    if ctld_ok; then
        sinfo -o '%P %a %D %T %c %G' || true
    fi
}

case "$ACTION" in
    status) print_status; exit 0 ;;
    logs) show_logs; exit 0 ;;
esac

[ "$(id -u)" -eq 0 ] || die "must run as root (it starts munged, slurmctld and slurmd)"

if [ "$ACTION" = stop ]; then
    stop_daemon slurmd "$RUN_DIR/slurmd.pid"
    stop_daemon slurmctld "$RUN_DIR/slurmctld.pid"
    exit 0
fi

for tool in slurmctld slurmd scontrol sinfo sbatch munged munge unmunge; do
    command -v "$tool" >/dev/null || die "'$tool' not found: apt-get install slurmctld slurmd slurm-client munge"
done

# --- the configuration ---------------------------------------------------------------------
mkdir -p "$RUN_DIR" "$LOG_DIR" "$STATE_DIR/slurmctld" "$STATE_DIR/slurmd" "$CONF_DIR"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

gres="" gres_lines=""
if [ "$GPUS" -gt 0 ]; then
    gres="Gres=gpu:$GPUS"
    gres_lines="NodeName=localhost Name=gpu File=$RUN_DIR/fakegpu[0-$((GPUS - 1))]"
fi
sed -e "s|@CLUSTER@|$CLUSTER|g" -e "s|@CPUS@|$CPUS|g" -e "s|@GPUS@|$GPUS|g" \
    -e "s|@MEM_MB@|$MEM_MB|g" -e "s|@GRES@|$gres|g" -e "s|@PARTITION@|$PARTITION|g" \
    -e "s|@STATE_DIR@|$STATE_DIR|g" -e "s|@RUN_DIR@|$RUN_DIR|g" -e "s|@LOG_DIR@|$LOG_DIR|g" \
    -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@SLURMD_PORT@|$SLURMD_PORT|g" \
    "$HERE/slurm.conf.in" >"$tmp/slurm.conf"
sed -e "s|@GRES_LINES@|$gres_lines|" "$HERE/gres.conf.in" >"$tmp/gres.conf"

if [ -e "$CONF_DIR/slurm.conf" ] && ! grep -q "$MARKER" "$CONF_DIR/slurm.conf" && [ "$FORCE" -ne 1 ]; then
    die "$CONF_DIR/slurm.conf exists and was not written by this script (no '$MARKER' line); " \
        "refusing to replace a real cluster's configuration (use --force on a throw-away machine)"
fi

same_config=0
if cmp -s "$tmp/slurm.conf" "$CONF_DIR/slurm.conf" && cmp -s "$tmp/gres.conf" "$CONF_DIR/gres.conf"; then
    same_config=1
fi

# Fake GPU devices: character devices (SLURM rejects plain files; /dev/null's numbers).
i=0
while [ "$i" -lt "$GPUS" ]; do
    dev="$RUN_DIR/fakegpu$i"
    if [ ! -c "$dev" ]; then
        rm -f "$dev"
        mknod "$dev" c 1 3
    fi
    i=$((i + 1))
done

# --- munge -----------------------------------------------------------------------------------
if ! munge_ok; then
    if [ ! -s /etc/munge/munge.key ]; then
        echo "start-slurm: creating /etc/munge/munge.key"
        if command -v mungekey >/dev/null; then
            mungekey --create --keyfile=/etc/munge/munge.key
        else
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
        fi
        chown munge:munge /etc/munge/munge.key
        chmod 0400 /etc/munge/munge.key
    fi
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    chmod 0755 /run/munge
    echo "start-slurm: starting munged"
    runuser -u munge -- /usr/sbin/munged || fail "munged did not start"
    for i in $(seq 1 50); do
        munge_ok && break
        sleep 0.2
    done
    munge_ok || fail "munge does not answer (munge -n | unmunge failed)"
fi

# --- slurmctld and slurmd ------------------------------------------------------------------------
if [ "$same_config" -eq 1 ] && pid_alive "$RUN_DIR/slurmctld.pid" && pid_alive "$RUN_DIR/slurmd.pid" && ctld_ok; then
    echo "start-slurm: already running with this configuration"
else
    stop_daemon slurmd "$RUN_DIR/slurmd.pid"
    stop_daemon slurmctld "$RUN_DIR/slurmctld.pid"
    if [ "$same_config" -ne 1 ]; then
        # A new node shape: start from an empty controller state (old jobs would not fit it).
        rm -rf "${STATE_DIR:?}/slurmctld" "${STATE_DIR:?}/slurmd"
        mkdir -p "$STATE_DIR/slurmctld" "$STATE_DIR/slurmd"
    fi
    cp "$tmp/slurm.conf" "$CONF_DIR/slurm.conf"
    cp "$tmp/gres.conf" "$CONF_DIR/gres.conf"
    chmod 0644 "$CONF_DIR/slurm.conf" "$CONF_DIR/gres.conf"
    echo "start-slurm: starting slurmctld"
    slurmctld || fail "slurmctld did not start"
    for i in $(seq 1 $((WAIT_S * 5))); do
        ctld_ok && break
        sleep 0.2
    done
    ctld_ok || fail "slurmctld does not answer 'scontrol ping' after ${WAIT_S} s"
    echo "start-slurm: starting slurmd"
    slurmd -N localhost || fail "slurmd did not start"
fi

# --- wait for the node -------------------------------------------------------------------------
state=""
for i in $(seq 1 $((WAIT_S * 2))); do
    state="$(node_state)"
    case "$state" in
        idle|mixed|allocated|completing) break ;;
        drain*|down*|fail*)
            # First registration of a node with a new shape can leave it drained or down.
            scontrol update nodename=localhost state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 0.5
done
case "$state" in
    idle|mixed|allocated|completing) ;;
    *) fail "node localhost is '${state:-unknown}' after ${WAIT_S} s (scontrol show node localhost: $(scontrol show node localhost 2>&1 | tr '\n' ' '))" ;;
esac

print_status
echo "start-slurm: ready (cluster $CLUSTER, partition $PARTITION, $CPUS CPUs, $GPUS fake GPUs)"
