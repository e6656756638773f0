#!/usr/bin/env bash
# Issue 45: the distributed product with the halo exchange through MPI messages against the
# node's shared-memory window ($CLSPMV_EXCHANGE), one `clspmv bench --distributed` run per
# path, rank count and matrix (each run measures its own 1-rank reference, side by side), then
# one merged report.
#
#   bash reports/exchange-ab.sh OUTDIR RANKS [MATRIX:FORMATS ...]
#
#   MATRIX:FORMATS  a bench matrix and its --formats (local,non-local), e.g.
#                   gen:poisson2d:k=6400:dia,ell; default: the random and Poisson matrices of
#                   issue 45's table
#
# On the GPU node, first: source .whl/gpu-env.sh. Writes OUTDIR/<path>-n<RANKS>-m<i>/ per run
# and OUTDIR/<path>/report.md (+ results.json) merging the runs of one path (records of the two
# paths share their keys, so they are merged apart). CLSPMV_CALIBRATE=0: no calibration (the
# formats are named; partition by entries). From the environment: DEVICE (default local-rank:
# one GPU per rank), PATHS (default "messages window"), PYTHON (default python3); the window's
# own knobs pass through to every run: CLSPMV_EXCHANGE_CHUNK (bytes of a piece) and
# CLSPMV_EXCHANGE_WHOLE (the share of a rank's x slice from which a peer gets all of it; 2:
# never), e.g. CLSPMV_EXCHANGE_WHOLE=2 PATHS=window for the per-peer copies alone.
set -uo pipefail
out=${1:?usage: bash reports/exchange-ab.sh OUTDIR RANKS [MATRIX:FORMATS ...]}
ranks=${2:?usage: bash reports/exchange-ab.sh OUTDIR RANKS [MATRIX:FORMATS ...]}
shift 2
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=("gen:random:n=20000000,k=10:csr-adaptive,csr-adaptive"
                                 "gen:poisson2d:k=6400:dia,ell")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CLSPMV_CALIBRATE=0
i=0
for c in "${cases[@]}"; do
    i=$((i + 1))
    matrix=${c%:*}
    formats=${c##*:}
    for path in ${PATHS:-messages window}; do
        dir="$out/$path-n$ranks-m$i"
        echo "exchange-ab.sh: $matrix, $ranks ranks, $path" >&2
        CLSPMV_EXCHANGE=$path mpiexec -n "$ranks" "${PYTHON:-python3}" -m clspmv bench \
            --distributed --device "${DEVICE:-local-rank}" --quiet --out "$dir" --note "reports/exchange-ab.sh: CLSPMV_EXCHANGE=$path" \
            --formats "$formats" --dtype float64 --repeat 20 --warmup 3 "$matrix" \
            || echo "exchange-ab.sh: $matrix $path ended with status $?" >&2
    done
done
for path in ${PATHS:-messages window}; do
    files=("$out/$path"-n"$ranks"-m*/results.json)
    [ -f "${files[0]}" ] && "${PYTHON:-python3}" -m clspmv report "${files[@]}" --out "$out/$path"
done
