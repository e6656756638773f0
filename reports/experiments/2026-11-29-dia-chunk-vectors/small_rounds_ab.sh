# cpu_vs_mkl on the two small DIA matrices, alternating the kernel without and with CHUNK_VW
cd /work/main
for i in 1 2; do
 for v in old new; do
  cp kernels_cl/dia.cl /tmp/diaab/dia.keep
  if [ $v = old ]; then sed -i 's/^#if !defined(COLMAP) \&\& (defined(VALUE_IS_DOUBLE)/#if 0 \&\& !defined(COLMAP) \&\& (defined(VALUE_IS_DOUBLE)/' kernels_cl/dia.cl; fi
  grep -c "^#if 0 &&" kernels_cl/dia.cl
  CLSPMV_CACHE_DIR=/tmp/diaab/cache-$v .venv/bin/python tools/cpu_vs_mkl.py gen:poisson2d:k=450 gen:banded:n=400000,diags=5,spread=1000 gen:poisson2d:k=1000 --formats dia,ellr,csr-blocks --device 1:0 --threads 2 --rounds 15 --out /tmp/diaab/small-$v-$i > /dev/null 2>&1
  cp /tmp/diaab/dia.keep kernels_cl/dia.cl
  python3 -c "
import json; d=json.load(open('/tmp/diaab/small-$v-$i/results.json')); recs=d['records'] if isinstance(d,dict) else d
print('$v $i', ' '.join(f\"{r['matrix'].split(':')[1]}:{r['median']['fastest_format']}:{r['median']['ms'][r['median']['fastest_format']]:.3f}ms:x{r['median']['x_mkl_optimised']:.2f}\" for r in recs))"
 done
done
