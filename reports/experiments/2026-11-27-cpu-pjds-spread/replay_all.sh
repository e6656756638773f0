#!/bin/bash
# replay_all.sh TREE OUT: every stored measurement (as model-77c487f.txt), model alone, each calibration refitted in TREE's form; 2 at a time
export CLSPMV_MATRICES=/work/shared/matrices; TREE=$1; OUT=$2
A=/work/main/reports/experiments/2026-11-26-auto-targets; B=/work/main/reports/experiments/2026-11-26-cpu-2core-zen5-row-lengths; Z=/work/main/reports/experiments/2026-11-26-cpu-2core-zen4-ell-order
J=$(mktemp -d); : > $J/jobs
add() { echo "$1|$2|$3|$4" >> $J/jobs; }   # suite measured calibration label
for n in 1 2 3; do for S in cpu demo offsuite real heldout anchors; do add $S $A/measured-zen5-$S-run$n.json $A/zen5-run$n.json measured-zen5-$S-run$n.json; done; done
for S in anchors heldout offsuite demo cpu; do add $S $A/xeon-410e675/measured-xeon-$S.json "$(ls $A/xeon-410e675/cal/calibration-*.json)" measured-xeon-$S.json; done
for S in cpu anchors; do add $S $A/h200-2bd93ea/h200-measured-$S.json $A/h200-2bd93ea/cal/calibration-NVIDIA_H200-580.159.04-0.1.0.json h200-measured-$S.json; done
for S in demo heldout offsuite; do add $S $A/h200-4c6cb4a/h200-measured-$S.json $A/h200-4c6cb4a/cal/calibration-NVIDIA_H200-580.159.04-0.1.0.json h200-measured-$S.json; done
for S in cpu demo offsuite real heldout; do add $S $B/zen5-run4/measured-zen5-$S-run4.json $B/zen5-run4/calibration-zen5-run4.json measured-zen5-$S-run4.json; done
for S in cpu demo offsuite real heldout anchors; do add $S $B/zen5-run5/measured-zen5-$S-run5.json $B/zen5-run5/calibration-zen5-run5.json measured-zen5-$S-run5.json; done
for S in heldout offsuite demo cpu anchors; do add $S $B/xeon-77c487f/measured-xeon-$S.json $B/xeon-77c487f/calibration-xeon.json xeonnew-measured-xeon-$S.json; done
for v in 31 30; do case $v in 31) CAL=$Z/calibration-pthread-skylake-avx512-AMD_EPYC-3.1_debian-0.1.0.json;; 30) CAL=$Z/calibration-pthread-AMD_EPYC-3.0-rc2-0.1.0.json;; esac
  for M in $Z/measured-*-pocl$v.json; do S=$(basename $M | sed 's/measured-\(.*\)-pocl.*/\1/'); add $S $M $CAL zen4-pocl$v-$(basename $M); done; done
i=0; while IFS='|' read S M C L; do i=$((i+1)); echo "cd $TREE && CLSPMV_CALIBRATE=0 PYTHONPATH=$TREE /work/main/.venv/bin/python tools/model_eval.py --suite $S --device facts --refit --measured $M --calibration $C 2>/dev/null | grep -v '^calibration' | sed 's|^|$S $L |' > $J/out.$(printf %03d $i)"; done < $J/jobs > $J/cmds
xargs -d '\n' -P 2 -I{} bash -c {} < $J/cmds
cat $J/out.* > $OUT; rm -rf $J
