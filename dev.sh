#!/usr/bin/env bash
# The two commands of the README, on a fresh clone:
#
#   bash dev.sh bench [clspmv bench options]   set up, then run the demo benchmark on the default
#                                              device (writes reports/<date>-<host>/)
#   bash dev.sh test  [pytest options]         set up with the test tools, lint, run the tests
#                                              (what CI runs: .ci/run calls this)
#
# Setting up means: a virtual environment in .venv (Python >= 3.10), the package installed in it
# with the extras the command needs, and an OpenCL device that builds kernels. For the device it
# tries, in order: a driver already installed (a GPU's, or any PoCL); PoCL from PyPI (the `pocl`
# extra, which works where its bundled LLVM knows the CPU); Debian's pocl-opencl-icd through
# apt-get when this user may install system packages (root or password-less sudo). If none
# works it stops with one message saying what to install. A shell script rather than a Makefile
# or tox: it needs nothing but bash and Python, and the device step is a sequence of tries that
# make expresses badly.
set -euo pipefail
cd "$(dirname "$0")"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1

usage() { echo "usage: bash dev.sh bench|test [options passed on]" >&2; exit 2; }
[ $# -ge 1 ] || usage
command=$1
shift
case "$command" in
    bench) extras="plot,mkl" ;;
    # mpi: the distributed product's tests launch mpiexec (the mpich wheel); oclgrind: every
    # kernel runs under the Oclgrind simulator's checks (the quick run), and must not skip.
    test) extras="test,lint,plot,mkl,oclgrind,mpi" ;;
    *) usage ;;
esac

start=$SECONDS
step() { printf '\n=== %s (%ds)\n' "$*" $((SECONDS - start)); }

step "Python environment: .venv"
[ -x .venv/bin/python ] || "${PYTHON:-python3}" -m venv .venv
# shellcheck disable=SC1091
source .venv/bin/activate
python --version
python -m pip install -q -e ".[$extras]"

step "OpenCL device"
# Exit status 0 when some OpenCL device other than the Oclgrind simulator builds a kernel.
opencl_compiles() { python -m clspmv.doctor --require-device; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        env DEBIAN_FRONTEND=noninteractive "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo env DEBIAN_FRONTEND=noninteractive "$@"
    else
        return 1
    fi
}

if ! opencl_compiles; then
    echo "no OpenCL device builds a kernel: trying PoCL from PyPI (the pocl extra)"
    python -m pip install -q -e ".[$extras,pocl]"
    if ! opencl_compiles; then
        # Its LLVM does not know this CPU (PoCL 3.0 on AMD Zen 5, for one): remove it, or it
        # would stay a platform whose every build fails.
        python -m pip uninstall -q -y pocl-binary-distribution
        echo "PoCL from PyPI does not build kernels here: trying Debian's pocl-opencl-icd"
        if command -v apt-get >/dev/null && as_root apt-get update -q \
                && as_root apt-get install -y -q --no-install-recommends pocl-opencl-icd; then
            :
        fi
        opencl_compiles || {
            echo "no OpenCL device builds kernels. Install an OpenCL driver: a GPU vendor's" \
                 "(NVIDIA, AMD, Intel), or PoCL for the CPU (Debian/Ubuntu:" \
                 "'sudo apt-get install pocl-opencl-icd'; conda: 'conda install pocl')," \
                 "then run this command again" >&2
            exit 1
        }
    fi
fi

case "$command" in
    bench)
        step "clspmv bench $*"
        clspmv devices
        clspmv bench "$@"
        ;;
    test)
        export CLSPMV_REQUIRE_OCLGRIND=1
        clspmv devices
        step "ruff check clspmv tests tools"
        ruff check clspmv tests tools
        step "tests"
        set +e
        python -m pytest -q "$@"
        status=$?
        set -e
        if [ "$status" -eq 5 ]; then
            echo "pytest collected no tests: that is a failure" >&2
            exit 1
        fi
        [ "$status" -eq 0 ] || exit "$status"
        step "tests passed"
        ;;
esac
