#!/bin/bash
# replay_l2.sh OUT: zen5 run6/run7 (PoCL 3.1, dealt pjds) and the zen5 PoCL 3.0 set, model alone, refitted in /tmp/wt-l2's form (EXP_* env)
export CLSPMV_MATRICES=/work/shared/matrices; TREE=/tmp/wt-l2; OUT=$1; R=/work/main/reports/experiments/2026-11-27-cpu-pjds-spread; P=/work/main/reports/experiments/2026-11-27-cpu-2core-zen5-pocl30
J=$(mktemp -d); : > $J/cmds; i=0
for n in 6 7; do for S in cpu demo offsuite real heldout anchors; do i=$((i+1))
  echo "cd $TREE && CLSPMV_CALIBRATE=0 PYTHONPATH=$TREE /work/main/.venv/bin/python tools/model_eval.py --suite $S --device facts --refit --measured $R/zen5-run$n/measured-zen5-$S-run$n.json --calibration $R/zen5-run6/calibration-zen5-run6.json 2>/dev/null | grep -v '^calibration' | sed 's|^|$S measured-zen5-$S-run$n.json |' > $J/out.$(printf %03d $i)" >> $J/cmds
done; done
for S in cpu demo offsuite real heldout anchors; do i=$((i+1))
  echo "cd $TREE && CLSPMV_CALIBRATE=0 PYTHONPATH=$TREE /work/main/.venv/bin/python tools/model_eval.py --suite $S --device facts --refit --measured $P/measured-pocl30-$S.json --calibration $P/calibration-pthread-AMD_EPYC-3.0-rc2-AuthenticAMD-26-2-0.1.0.json 2>/dev/null | grep -v '^calibration' | sed 's|^|$S measured-zen5-$S-run30.json |' > $J/out.$(printf %03d $i)" >> $J/cmds
done
xargs -d '\n' -P 2 -I{} bash -c {} < $J/cmds
cat $J/out.* > $OUT; rm -rf $J
