cd "$(git rev-parse --show-toplevel)"
R=reports/experiments/2026-11-26-xeon-auto
python3 - <<'PY'
import json
d=json.load(open("reports/experiments/2026-11-26-h200-model-eval/measured-offsuite.json"))
json.dump(d["calibrations"]["current"], open("/tmp/h200-cal.json","w"))
PY
for W in 0.02 0.005 0.08; do
  for S in offsuite heldout cpu demo real; do
    for run in e308896 0f26183; do
      echo "== W=$W zen5 $run $S"
      .venv/bin/python reports/experiments/2026-11-26-xeon-auto/prior_weight_replay.py $W $S $R/measured-zen5-$S-$run.json $R/calibration-zen5-pocl31-e308896.json $R/calibration-zen5-pocl31-0f26183.json 2>&1 | grep "geometric mean"
    done
  done
  for S in offsuite heldout real; do
    echo "== W=$W h200 model-eval $S"
    .venv/bin/python reports/experiments/2026-11-26-xeon-auto/prior_weight_replay.py $W $S reports/experiments/2026-11-26-h200-model-eval/measured-$S.json /tmp/h200-cal.json 2>&1 | grep "geometric mean"
  done
done
echo DONE
