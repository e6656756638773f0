# format="auto" on the H200 node's 16-core Xeon (PoCL 5.0, device "cpu"): a fresh calibration, then
# tools/model_eval.py --trial per suite given as arguments (run from the repository root on the device machine,
# after `source .whl/gpu-env.sh`; CLSPMV_CACHE_DIR set by the caller). Writes under $OUT.
set -u
if [ ! -f "$CLSPMV_CACHE_DIR"/calibration-*.json ] 2>/dev/null; then
  /usr/bin/time -f "calibrate wall %e s" python3 -m clspmv calibrate --device cpu > "$OUT/calibrate-xeon.txt" 2>&1
fi
for S in "$@"; do
  timeout "${SUITE_LIMIT:-250}" python3 tools/model_eval.py --suite "$S" --device cpu --trial \
    --out "$OUT/measured-xeon-$S.json" > "$OUT/eval-xeon-$S.txt" 2>&1
  echo "$S rc=$?"
done
