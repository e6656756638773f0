# from_scipy before and after the in-place upload, alternately in fresh processes (bash upload_ab.sh BASE NEW):
# BASE and NEW are checkouts (e.g. git worktree add /tmp/base 3cbd82b), run from the repository root.
for round in 1 2; do
for spec in "gen:poisson2d:k=1000" "gen:random:n=400000,k=10" "gen:chunglu:n=600000,k=8,seed=6" "gen:stencil27:k=70"; do
  for tree in "$1" "$2"; do
    echo -n "$tree r$round "
    CLSPMV_CALIBRATE=0 PYTHONPATH=$tree flock /tmp/clspmv-measure.lock .venv/bin/python reports/experiments/2026-11-26-xeon-auto/upload_ab.py 1:0 "$spec" csr-scalar,csr-blocks,ellr,dia,hyb,sell,coo 3 2>&1 | grep -v Warn | tr '\n' '|'
    echo
  done
done
done
