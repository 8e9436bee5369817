#!/usr/bin/env bash
# GPU call Q (2026-12-04, fifth session): call N's build; the regression check's stream-reuse lab alone
# (call O ran the others; its stream-reuse lab ran out of Score-P memory with 300 streams).
set -uo pipefail
ROOT=$PWD; K=$ROOT/.gpu-kit-slim; O=${OUT:-/tmp/out}
export DNABERT_SCALING_REVISION=$(cat .gpu-run/REVISION)
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
[ -x /opt/scorep-cache/bin/scorep ] || cat .gpu-run/inst-n/scorep-cache-install.tar.xz.part* | xz -d | tar -x -C /opt
ln -sfn /opt/scorep-cache /opt/scorep; el unpacked
# shellcheck disable=SC1091
source "$K/setup-on-gpu.sh" "$K" > /dev/null 2>&1; el setup
timeout 150 python3 containers/scorep-patches/check/check_patches.py --prefix /opt/scorep --lab stream-reuse > "$O/check-q.log" 2>&1; el "stream-reuse lab rc=$?"
grep -v "^\[Score-P\]" "$O/check-q.log" | grep -v "^$" | cut -c1-400
