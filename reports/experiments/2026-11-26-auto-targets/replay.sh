#!/bin/bash
# replay.sh: for every measured file, refit its own calibration (and extra ones) and print summaries
cd /work/main
extract() { python3 -c "
import json,sys; d=json.load(open('$1')); c=d['calibrations']; k=next(iter(c)); json.dump(c[k], open('$2','w'))"; }
run() { # suite measured cal...
  S=$1; M=$2; shift 2
  CLSPMV_CALIBRATE=0 .venv/bin/python tools/model_eval.py --suite $S --device facts --refit --measured $M --calibration "$@" 2>&1 | grep "geometric mean" | sed "s/^/$S /" | cut -c1-140
}
X=reports/experiments/2026-11-26-xeon-auto
for S in cpu demo offsuite real heldout; do run $S /tmp/s35/run1/measured-$S.json /tmp/s35/zen5-run1.json /tmp/s35/zen5-run2.json $X/calibration-zen5-pocl31-e308896.json $X/calibration-zen5-pocl31-0f26183.json; done
for S in cpu demo offsuite real heldout; do run $S /tmp/s35/run2/measured-$S.json /tmp/s35/zen5-run1.json /tmp/s35/zen5-run2.json; done
run anchors /tmp/s35/anchors/measured-anchors.json /tmp/s35/zen5-run1.json /tmp/s35/zen5-run2.json
run anchors /tmp/s35/run2/measured-anchors.json /tmp/s35/zen5-run1.json /tmp/s35/zen5-run2.json
XE=reports/experiments/2026-11-26-auto-targets/xeon-410e675
for S in anchors heldout offsuite demo cpu; do run $S $XE/measured-xeon-$S.json $XE/cal/calibration-*.json; done
for S in cpu demo heldout; do extract $X/h200-measured-$S-3612ea9.json /tmp/s35/h200cal.json; run $S $X/h200-measured-$S-3612ea9.json /tmp/s35/h200cal.json; done
