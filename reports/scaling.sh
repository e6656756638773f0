#!/usr/bin/env bash
# Strong scaling of the distributed product (issues 12 and 15): the same
# `clspmv bench --distributed` run with 1, 2, 4 and 8 MPI ranks (one device each), merged into
# one report whose "Distributed product" section has the efficiency table per mode and the
# model's prediction next to it (plot: distributed_<dtype>.png).
#
#   bash reports/scaling.sh cpu|gpu OUTDIR [RANKS...] [-- BENCH ARGS...]
#
#   cpu  PoCL on the CPU, one thread per rank (POCL_MAX_PTHREAD_COUNT=1, --device cpu); more
#        ranks than cores oversubscribe the machine: right for correctness, not for timings.
#   gpu  one rank per GPU (--device local-rank: GPU local_rank % gpus of each node); give at
#        most as many ranks as GPUs. On the GPU node source .whl/gpu-env.sh first (see
#        reports/README.md).
#   RANKS         default: 1 2 4 8
#   BENCH ARGS    passed to every run (default: gen:poisson2d:k=1500 --dtype float64), e.g.
#                 --suite anchors, --modes vector,task, --formats csr-vector,csr-scalar
#
# Environment: MPIEXEC (default: mpiexec), PYTHON (default: python3).
# Each rank count writes OUTDIR/n<N>/ (results.json and its own report: each run measures its
# 1-rank reference itself, rank 0 alone on a sub-communicator); then
#   clspmv report OUTDIR/n*/results.json --out OUTDIR
# merges them (the command is in the report's header with every run's exact command line).
# Example (issue 15, 4 GPUs):  bash reports/scaling.sh gpu reports/h200x4-scaling 1 2 4 -- \
#     --suite anchors --dtype float64
set -euo pipefail
kind=${1:?usage: bash reports/scaling.sh cpu|gpu OUTDIR [RANKS...] [-- BENCH ARGS...]}
out=${2:?usage: bash reports/scaling.sh cpu|gpu OUTDIR [RANKS...] [-- BENCH ARGS...]}
shift 2
ranks=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    ranks+=("$1")
    shift
done
[ $# -gt 0 ] && shift  # the --
[ ${#ranks[@]} -gt 0 ] || ranks=(1 2 4 8)
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(gen:poisson2d:k=1500 --dtype float64)
mpiexec=${MPIEXEC:-mpiexec}
python=${PYTHON:-python3}
case $kind in
    cpu) device=(--device cpu); export POCL_MAX_PTHREAD_COUNT=1 ;;
    gpu) device=(--device local-rank) ;;
    *) echo "scaling.sh: the first argument must be cpu or gpu, got '$kind'" >&2; exit 2 ;;
esac
mkdir -p "$out"
files=()
for n in "${ranks[@]}"; do
    echo "scaling.sh: $n rank(s)" >&2
    "$mpiexec" -n "$n" "$python" -m clspmv bench --distributed "${device[@]}" --quiet \
        --out "$out/n$n" --note "reports/scaling.sh $kind: $n rank(s)" "${args[@]}"
    files+=("$out/n$n/results.json")
done
"$python" -m clspmv report "${files[@]}" --out "$out"
