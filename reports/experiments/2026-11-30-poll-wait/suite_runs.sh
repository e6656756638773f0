cd /work/main
for i in 1 2; do
 for mode in on off; do
  if [ $mode = off ]; then export CLSPMV_POLL_SECONDS=0; else unset CLSPMV_POLL_SECONDS; fi
  OCL_ICD_VENDORS=/tmp/pocl-only flock /tmp/clspmv-measure.lock .venv/bin/python tools/cpu_vs_mkl.py --suite cpu --device 1:0 --threads 2 --rounds 15 --note "poll $mode run $i" --out /tmp/pollab/$mode$i > /tmp/pollab/$mode$i.log 2>&1
 done
done
echo done
