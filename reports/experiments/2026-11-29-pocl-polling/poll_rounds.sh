cd /work/main
for i in 1 2; do for m in off on; do
 CLSPMV_CACHE_DIR=/tmp/diaab/cache-poll .venv/bin/python /tmp/diaab/poll_rounds.py $m gen:banded:n=1500000,diags=3,spread=50000,seed=2 gen:poisson2d:k=1000 gen:poisson2d:k=450 gen:banded:n=400000,diags=5,spread=1000 gen:stencil27:k=70 --formats dia,ellr,csr-blocks --device 1:0 --threads 2 --rounds 15 --out /tmp/diaab/pr-$m-$i > /dev/null 2>&1
 python3 -c "
import json; d=json.load(open('/tmp/diaab/pr-$m-$i/results.json')); recs=d['records'] if isinstance(d,dict) else d
print('$m $i', ' '.join(f\"{r['matrix'].split(':')[1][:12]}:{r['median']['ms']['dia']:.3f}ms:x{r['median']['ms']['mkl-optimised']/r['median']['ms']['dia']:.2f}\" for r in recs), flush=True)"
done; done
