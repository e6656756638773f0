#!/bin/bash
# On the GPU node's CPU: the large correction split by gathers (replay_split.py's "split") against
# the library's, on the node's stored kernel times and quick calibrations.
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/replay; mkdir -p $R
for V in old split; do for s in offsuite cpu heldout; do
  echo "== $V $s" >> $R/replay.txt
  VARIANT=$V python3 .whl/variant.py --suite $s --device cpu --measured .whl/nodeeval/node-$s.json --calibration .whl/nodeeval/node-new-0.json .whl/nodeeval/node-new-1.json >> $R/replay.txt 2>&1
done; done
