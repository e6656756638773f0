#!/usr/bin/env bash
# On the device tool's nvidia-h200, from the project root with .whl/ and .h200-extra/matrices (a copy of
# ../shared/matrices) carried:  bash reports/experiments/2026-11-27-trial-csr-family/h200.sh SUITE...
# A calibration (timed) into /tmp/h200cal unless one is there (a warm machine), then tools/model_eval.py --trial per
# suite; everything under $OUT/r, packed as $OUT/r.tgz. LABEL (default h200) names the files (h100 on an H100); a suite
# is skipped once the command has run BUDGET seconds (default: none).
source .whl/gpu-env.sh
export PYTHONPATH=$PWD:$PYTHONPATH  # this checkout's clspmv, not the carried wheel's
export CLSPMV_CACHE_DIR=/tmp/h200cal CLSPMV_MATRICES=$PWD/.h200-extra/matrices
mkdir -p "$CLSPMV_CACHE_DIR" "$OUT/r"
L=${LABEL:-h200}
if ! ls "$CLSPMV_CACHE_DIR"/calibration-*.json >/dev/null 2>&1; then
    /usr/bin/time -f "calibrate wall %e s" python3 -m clspmv calibrate --device nvidia 2>&1 \
        | tr '\r' '\n' | tail -3 > "$OUT/r/calibrate-$L.txt"
fi
for S in "$@"; do
    [ -n "${BUDGET:-}" ] && [ "$SECONDS" -gt "$BUDGET" ] && { echo "skipped $S at ${SECONDS} s"; continue; }
    limit=150; [ "$S" = anchors ] && limit=330
    timeout $limit python3 tools/model_eval.py --suite "$S" --device nvidia --trial \
        --out "$OUT/r/$L-measured-$S.json" > "$OUT/r/$L-eval-$S.txt" 2>&1
    tail -n 2 "$OUT/r/$L-eval-$S.txt"
done
cp "$CLSPMV_CACHE_DIR"/calibration-*.json "$OUT/r/"
tar czf "$OUT/r.tgz" -C "$OUT" r
