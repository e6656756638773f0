# Sourced by the device scripts of reports/ (h200.sh, h200-selection.sh):
#   bench_part OUTDIR PART ARGS...
# runs `python3 -m clspmv bench --quiet ARGS...` into a fresh folder and keeps its results.json
# as OUTDIR/PART.json (complete even when --max-seconds stops the run early).
bench_part() {
    local out=$1 part=$2 tmp
    shift 2
    tmp=$(mktemp -d)
    python3 -m clspmv bench --quiet --out "$tmp" "$@"
    cp "$tmp/results.json" "$out/$part.json"
}
