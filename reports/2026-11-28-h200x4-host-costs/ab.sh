#!/usr/bin/env bash
# The 4-rank bench of reports/scaling.sh (strong, window, modes vector/overlap/task) for each
# VARIANT:MATRIX given, on the GPU node (source .whl/gpu-env.sh first):
#
#   bash reports/2026-11-28-h200x4-host-costs/ab.sh OUTDIR VARIANT:MATRIX...
#
#   new      the wheels of .whl (the library as built)
#   old      the clspmv wheel in .whl/old/ (e.g. built from the commit before), first on the path
#   unbound  new, every rank free to run on any core (mpiexec --bind-to none)
#   aff      new, rank k pinned to the k-th quarter of the node's cores (taskset)
# MATRIX: a reports/scaling.sh name (poisson2d, stencil27, block, constrows, random, powerlaw).
# Output: OUTDIR/<variant>/strong/window/<matrix>-n4/ (each run measures its own 1-rank
# reference); BUDGET seconds (default 500) as scaling.sh's CLSPMV_SCALING_BUDGET.
set -u
out=$1; shift
if [ -d .whl/old ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/old .whl/old/*.whl
fi
printf '#!/bin/sh\nPYTHONPATH=/tmp/old:/tmp/site exec python3 "$@"\n' > /tmp/oldpy
cat > /tmp/affpy <<'EOT'
#!/usr/bin/env bash
k=${OMPI_COMM_WORLD_LOCAL_RANK:-0}; n=${OMPI_COMM_WORLD_LOCAL_SIZE:-1}
cpus=$(lscpu -p=CPU,CORE | grep -v '^#' | sort -t, -k2n -k1n | awk -F, -v k="$k" -v n="$n" '
    {core[NR] = $2; cpu[NR] = $1}
    END {m = 0; for (i = 1; i <= NR; i++) if (!(core[i] in seen)) seen[core[i]] = m++
         per = int(m / n); out = ""
         for (i = 1; i <= NR; i++) if (int(seen[core[i]] / per) == k) out = out (out == "" ? "" : ",") cpu[i]
         print out}')
exec taskset -c "$cpus" python3 "$@"
EOT
printf '#!/bin/sh\nexec mpiexec --bind-to none "$@"\n' > /tmp/mpx
chmod +x /tmp/oldpy /tmp/affpy /tmp/mpx
export CLSPMV_CALIBRATE=0 CLSPMV_SCALING_EXCHANGES=window CLSPMV_SCALING_PARTS=strong
for spec in "$@"; do
    variant=${spec%%:*}; matrix=${spec#*:}
    case $variant in
        new) export PYTHON=python3 MPIEXEC=mpiexec ;;
        old) export PYTHON=/tmp/oldpy MPIEXEC=mpiexec ;;
        unbound) export PYTHON=python3 MPIEXEC=/tmp/mpx ;;
        aff) export PYTHON=/tmp/affpy MPIEXEC=/tmp/mpx ;;
        *) echo "ab.sh: unknown variant '$variant'" >&2; exit 2 ;;
    esac
    CLSPMV_SCALING_MATRICES=$matrix CLSPMV_SCALING_BUDGET=${BUDGET:-500} \
        bash reports/scaling.sh gpu "$out/$variant" 4
done
