#!/usr/bin/env bash
# Issue 45: strong and weak scaling of the distributed product and distributed CG's time per
# iteration, over 1, 2 and 4 ranks (one device each), per mode and exchange path.
#
#   bash reports/scaling.sh cpu|gpu OUTDIR [RANKS...] [-- BENCH ARGS...]
#
#   cpu  PoCL on the CPU, one thread per rank (POCL_MAX_PTHREAD_COUNT=1, --device cpu); more
#        ranks than cores oversubscribe the machine: right for correctness, not for timings.
#   gpu  one rank per GPU (--device local-rank); on the GPU node source .whl/gpu-env.sh first.
#   RANKS      default: 1 2 4
#   BENCH ARGS added to every `clspmv bench` run (e.g. --formats csr-adaptive,csr-adaptive)
#
# What runs (each piece one command; its command line is in its output's header):
#   strong  `clspmv bench --distributed` on each matrix at its full size, per rank count > 1
#           and exchange path -> OUTDIR/strong/<exchange>/<matrix>-n<N>/ (each N-rank run
#           measures its own 1-rank reference, rank 0 alone: no 1-rank run needed), merged into
#           OUTDIR/strong/<exchange>/report.md (scaling, parts, one product's timeline per rank)
#   weak    the same with the matrix grown with the ranks (N/4 of the full size on N ranks:
#           4 ranks run the full one: strong's run, made by whichever part comes first) ->
#           OUTDIR/weak/<exchange>/<matrix>-n<N>/, a merged report, and
#           OUTDIR/weak/<exchange>/weak.md: t(1 rank, 1/4 size) / t(N ranks, N/4 size) per mode
#   cg      reports/scaling_cg.py (CG's ms per iteration, dot products by Allreduce) on the
#           regular matrices at full size -> OUTDIR/cg/<exchange>-<matrix>-n<N>.json, and
#           OUTDIR/cg/cg.md (x 1 rank per rank count)
# Exchange paths: with 1 rank there is none (run once, as "none").
#
# Resumable within a time budget: a piece whose output exists is skipped; before starting a
# piece the script stops (exit 0, "not finished" on stderr) once CLSPMV_SCALING_BUDGET seconds
# (default 420) have passed, so a command stays under the device tool's 8-10 minutes: call the
# same command again until it prints "scaling.sh: finished". OUTDIR/commands.txt lists every
# command run, in order.
#
# Knobs (environment):
#   CLSPMV_SCALING_PARTS      "strong weak cg" (default: all three)
#   CLSPMV_SCALING_MATRICES   names from: poisson2d stencil27 banded block random powerlaw
#                             constrows (default: all; constrows is the regular matrix not tuned
#                             on), or full bench specs (strong and cg only)
#   CLSPMV_SCALING_EXCHANGES  "window messages" (default; values of CLSPMV_EXCHANGE)
#   CLSPMV_SCALING_MODES      vector,overlap,task (default)
#   CLSPMV_SCALING_SHRINK     divide every size by this (default 1; e.g. 20000 for a CPU check)
#   CLSPMV_SCALING_REPEAT     bench --repeat (default 10), --warmup 2
#   CLSPMV_SCALING_CG_ITERATIONS  default 50
#   CLSPMV_SCALING_BUDGET     seconds, see above (default 420)
#   MPIEXEC (default mpiexec), PYTHON (default python3); CLSPMV_CALIBRATE=0 skips calibration
#   (formats then by the quick default, partition by entries).
set -uo pipefail
usage="usage: bash reports/scaling.sh cpu|gpu OUTDIR [RANKS...] [-- BENCH ARGS...]"
kind=${1:?$usage}
out=${2:?$usage}
shift 2
ranks=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    ranks+=("$1")
    shift
done
[ $# -gt 0 ] && shift  # the --
[ ${#ranks[@]} -gt 0 ] || ranks=(1 2 4)
extra=("$@")
mpiexec=${MPIEXEC:-mpiexec}
python=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
case $kind in
    cpu) device=cpu; export POCL_MAX_PTHREAD_COUNT=1 ;;
    gpu) device=local-rank ;;
    *) echo "scaling.sh: the first argument must be cpu or gpu, got '$kind'" >&2; exit 2 ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
parts=${CLSPMV_SCALING_PARTS:-strong weak cg}
matrices=${CLSPMV_SCALING_MATRICES:-poisson2d stencil27 banded block random powerlaw constrows}
exchanges=${CLSPMV_SCALING_EXCHANGES:-window messages}
modes=${CLSPMV_SCALING_MODES:-vector,overlap,task}
shrink=${CLSPMV_SCALING_SHRINK:-1}
repeat=${CLSPMV_SCALING_REPEAT:-10}
budget=${CLSPMV_SCALING_BUDGET:-420}
regular="poisson2d stencil27 banded block constrows"
mkdir -p "$out"
log="$out/commands.txt"

# spec NAME RANKS: the bench spec of matrix NAME sized for RANKS of 4 (4: issue 45's size),
# divided by CLSPMV_SCALING_SHRINK; a full spec (gen:..., a path) as it is.
spec() {
    case $1 in *:* | */* | *.mtx*) echo "$1"; return ;; esac
    "$python" - "$1" "$2" "$shrink" <<'EOF'
import sys
name, ranks, shrink = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
f = ranks / 4 / shrink
r = lambda v: max(1, round(v))
specs = {
    "poisson2d": f"gen:poisson2d:k={r(6400 * f ** 0.5)}",
    "stencil27": f"gen:stencil27:k={r(200 * f ** (1 / 3))}",
    "banded": f"gen:banded:n={r(20_000_000 * f)},diags=11,spread=1000",
    "block": f"gen:block:k={r(107 * f ** (1 / 3))},b=5",
    "random": f"gen:random:n={r(20_000_000 * f)},k=10",
    "powerlaw": f"gen:powerlaw:n={r(10_000_000 * f)},k=21,local=0.7,seed=1",
    "constrows": f"gen:constrows:n={r(5_200_000 * f)},k=39,spread=2000",
}
if name not in specs:
    sys.exit(f"scaling.sh: unknown matrix {name!r}; one of {' '.join(specs)} or a full spec")
print(specs[name])
EOF
}

start=$SECONDS
# run DIR-OR-FILE COMMAND...: the piece unless its output exists; false once over budget
run() {
    local done=$1
    shift
    if [ -e "$done" ] || [ -e "$done.failed" ]; then
        return 0  # done, or failed before (remove the .failed file to try again)
    fi
    if [ $((SECONDS - start)) -ge "$budget" ]; then
        echo "scaling.sh: not finished (budget of ${budget}s spent); run the same command again" >&2
        exit 0
    fi
    echo "scaling.sh: $*" >&2
    echo "$*" >>"$log"
    if ! "$@"; then
        echo "scaling.sh: failed: $*" >&2
        mkdir -p "$(dirname "$done")"
        echo "$*" >"$done.failed"
    fi
}

bench() {  # bench DIR N EXCHANGE NOTE SPEC
    local dir=$1 n=$2 exchange=$3 note=$4 matrix=$5
    run "$dir/results.json" env CLSPMV_EXCHANGE="$exchange" "$mpiexec" -n "$n" "$python" -m clspmv \
        bench --distributed --device "$device" --quiet --out "$dir" --modes "$modes" \
        --repeat "$repeat" --warmup 2 --dtype float64 --note "$note" "${extra[@]}" "$matrix"
}

paths_for() {  # the exchange paths of N ranks
    if [ "$1" -eq 1 ]; then echo none; else echo "$exchanges"; fi
}

for part in $parts; do
    for name in $matrices; do
        [ "$part" = cg ] && [[ " $regular " != *" $name "* ]] && [[ $name != *:* ]] && continue
        [ "$part" = weak ] && [[ $name == *:* ]] && continue
        for n in "${ranks[@]}"; do
            # strong: an N-rank run measures its 1-rank reference itself (rank 0 alone)
            [ "$part" = strong ] && [ "$n" -eq 1 ] && [ ${#ranks[@]} -gt 1 ] && continue
            size=4
            [ "$part" = weak ] && size=$n
            matrix=$(spec "$name" "$size") || exit 2
            for exchange in $(paths_for "$n"); do
                ex=$exchange
                [ "$ex" = none ] && ex=auto
                label=${name//[^A-Za-z0-9]/_}
                note="reports/scaling.sh $kind $part: $n rank(s), CLSPMV_EXCHANGE=$ex"
                case $part in
                    strong | weak)
                        dir="$out/$part/$exchange/$label-n$n"
                        if [ "$part" = weak ] && [ "$n" -eq 4 ]; then
                            # 4 ranks of the weak series run the full size: strong's run
                            dir="$out/strong/$exchange/$label-n$n"
                            note="reports/scaling.sh $kind strong: $n rank(s), CLSPMV_EXCHANGE=$ex"
                        fi
                        bench "$dir" "$n" "$ex" "$note" "$matrix" ;;
                    cg)
                        mkdir -p "$out/cg"
                        run "$out/cg/$exchange-$label-n$n.json" env CLSPMV_EXCHANGE="$ex" \
                            "$mpiexec" -n "$n" "$python" "$here/scaling_cg.py" \
                            "$out/cg/$exchange-$label-n$n.json" "$matrix" --device "$device" \
                            --iterations "${CLSPMV_SCALING_CG_ITERATIONS:-50}" ;;
                    *) echo "scaling.sh: unknown part '$part' (strong, weak, cg)" >&2; exit 2 ;;
                esac
            done
        done
    done
done

# the merged reports and tables (cheap: redone on every call)
for part in strong weak; do
    for exchange in $exchanges; do
        files=()
        for f in "$out/$part/$exchange"/*/results.json "$out/$part/none"/*/results.json; do
            [ -f "$f" ] && files+=("$f")
        done
        if [ "$part" = weak ]; then  # the series' 4-rank runs, shared with strong
            for f in "$out/weak/none"/*-n1/results.json; do
                label=$(basename "$(dirname "$f")")
                shared="$out/strong/$exchange/${label%-n1}-n4/results.json"
                [ -f "$shared" ] && files+=("$shared")
            done
        fi
        [ ${#files[@]} -gt 0 ] || continue
        "$python" -m clspmv report "${files[@]}" --out "$out/$part/$exchange" --force >/dev/null
        if [ "$part" = weak ]; then
            "$python" "$here/scaling_tables.py" weak "$out/$part/$exchange/weak.md" "${files[@]}"
        fi
    done
done
if [ -d "$out/cg" ]; then
    "$python" "$here/scaling_tables.py" cg "$out/cg/cg.md" "$out/cg"/*.json
fi
echo "scaling.sh: finished ($out)" >&2
