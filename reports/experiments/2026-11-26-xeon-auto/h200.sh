source .whl/gpu-env.sh
export CLSPMV_CACHE_DIR=$OUT/cal; mkdir -p $CLSPMV_CACHE_DIR
/usr/bin/time -f "calibrate wall %e s" python3 -m clspmv calibrate --device nvidia 2>&1 | tr '\r' '\n' | tail -3 > $OUT/calibrate-h200.txt
for S in offsuite demo cpu heldout; do
  timeout 150 python3 tools/model_eval.py --suite $S --device nvidia --trial --out $OUT/h200-measured-$S.json > $OUT/h200-eval-$S.txt 2>&1
done
tail -n 2 $OUT/h200-eval-*.txt
