#!/usr/bin/env bash
# Before/after on the GPU node (source .whl/gpu-env.sh first; .whl/old/ holds the "before"
# wheel of clspmv): each RUN alternates the two libraries, one process each.
#
#   bash reports/2026-11-28-h200x4-product-order/ab.sh OUTDIR cg|order ROUNDS
#
#   cg     reports/scaling_cg.py on gen:poisson2d:k=6400 (ITERATIONS, default 200) at 4 ranks,
#          ROUNDS times each library, then once each at 1 rank -> OUTDIR/cg-<lib>-n<N>-<i>.json
#   order  probe_order.py (VARIANTS vector,overlap) on gen:poisson2d:k=6400, ROUNDS times each
#          library -> OUTDIR/<lib>-<i>/order-poisson2d-n4.json
set -eu
out=$1; what=$2; rounds=${3:-2}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/old .whl/old/*.whl
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CLSPMV_CALIBRATE=0
m=gen:poisson2d:k=6400
here=$(dirname "$0")
run() {  # LIB N COMMAND...
    lib=$1; n=$2; shift 2
    if [ "$lib" = before ]; then pp=/tmp/old:/tmp/site; else pp=/tmp/site; fi
    PYTHONPATH=$pp mpiexec -n "$n" python3 "$@"
}
for i in $(seq "$rounds"); do
    for lib in before after; do
        if [ "$what" = cg ]; then
            run $lib 4 reports/scaling_cg.py "$out/cg-$lib-n4-$i.json" $m \
                --iterations "${ITERATIONS:-200}"
        else
            VARIANTS=vector,overlap run $lib 4 "$here/probe_order.py" "$out/$lib-$i" $m
        fi
    done
done
if [ "$what" = cg ]; then
    for lib in before after; do
        run $lib 1 reports/scaling_cg.py "$out/cg-$lib-n1.json" $m --iterations "${ITERATIONS:-200}"
    done
fi
