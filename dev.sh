#!/usr/bin/env bash
# The two commands of the README, on a fresh clone:
#
#   bash dev.sh bench [clspmv bench options]   set up, then run the demo benchmark on the default
#                                              device (writes reports/<date>-<host>/)
#   bash dev.sh test  [tox options]            set up, then run tox: every environment of
#                                              tox.ini (what CI runs: .ci/run calls this), or
#                                              those named, e.g. `-e main -- -k csr`
#
# Setting up means: a virtual environment in .venv (Python >= 3.10), the package installed in it
# with the extras the command needs (tox for `test`), and an OpenCL device that builds and runs
# kernels. For the device it tries, in order, and says in one line what each try found (the
# devices that work, or each device's reason, e.g. "PoCL 3.0 from PyPI cannot compile for this
# CPU (LLVM: unknown target CPU 'znver5')", from `python -m clspmv.doctor --require-device`): the
# drivers already installed (a GPU's, or any PoCL); for `bench` only, PoCL from PyPI (the `pocl`
# extra, which works where its bundled LLVM knows the CPU; tox's environments do not see .venv's
# packages: `tox -e pypi-pocl` tests it); Debian's pocl-opencl-icd through apt-get when this user
# may install system packages (root or password-less sudo), waiting up to APT_LOCK_WAIT_S seconds
# for an apt or dpkg that holds the package lock (unattended upgrades at a first boot). If none
# works it stops with one message saying what to install. For `test` it then lets tox find the
# other Pythons pyenv holds (the py3XX environments skip where there is none) and runs tox, which
# fails when an environment's pytest collects no test. A shell script in front of tox: it needs
# nothing but bash and Python, and the device step is a sequence of tries that tox expresses
# badly. Sourced (`source dev.sh`), it defines its functions and runs nothing (tests/test_dev_sh.py
# runs the device step with stand-ins for apt-get and python).
set -euo pipefail

APT_LOCK_WAIT_S=300  # seconds apt-get waits for the package lock another apt or dpkg holds
APT_POLL_S=5         # seconds between tries of apt-get update while another holds its lock
INSTALL_HINT="Install an OpenCL driver: a GPU vendor's (NVIDIA, AMD, Intel), or PoCL for the CPU\
 (Debian/Ubuntu: 'sudo apt-get install pocl-opencl-icd'; conda: 'conda install pocl'), then run\
 this command again"

usage() { echo "usage: bash dev.sh bench|test [options passed on]" >&2; exit 2; }

step() { printf '\n=== %s (%ds)\n' "$*" $((SECONDS - start)); }

# The last non-empty line of file $1 (a failed command's reason when it gives no other).
last_line() { awk 'NF { line = $0 } END { print line }' "$1"; }

# One line "  $1: <the doctor's verdict>"; status 0 when a device other than a simulator builds
# and runs kernels, 1 when none does, 2 when the check itself failed (no verdict: the package
# does not import, say), where installing a driver would not help.
try_device() {
    local verdict status=0
    verdict=$(python -m clspmv.doctor --require-device 2>"$log") || status=$?
    if [ -z "$verdict" ]; then
        echo "  $1: the device check (python -m clspmv.doctor --require-device) failed:" \
             "$(last_line "$log")"
        return 2
    fi
    echo "  $1: $verdict"
    return "$status"
}

try_pypi_pocl() {  # $1: the extras of the command; status as try_device's
    local what="PoCL from PyPI (the pocl extra)" status=0
    if ! python -m pip install -q -e ".[$1,pocl]" >"$log" 2>&1; then
        echo "  $what: pip could not install it: $(last_line "$log")"
        return 1
    fi
    try_device "$what" || status=$?
    if [ "$status" -eq 1 ]; then
        # A PoCL whose LLVM does not know this CPU (3.0 on AMD Zen 5, for one) would stay a
        # platform whose every build fails: removed again.
        python -m pip uninstall -q -y pocl-binary-distribution >/dev/null 2>&1 || true
    fi
    return "$status"
}

can_install_packages() {
    [ "$(id -u)" -eq 0 ] || { command -v sudo >/dev/null && sudo -n true 2>/dev/null; }
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        env DEBIAN_FRONTEND=noninteractive "$@"
    else
        sudo env DEBIAN_FRONTEND=noninteractive "$@"
    fi
}

# apt-get with the package lock waited for up to APT_LOCK_WAIT_S; its output in $log.
apt_get() { as_root apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT_S" -q "$@" >"$log" 2>&1; }

# apt-get update does not wait for the lock of its lists, whatever DPkg::Lock::Timeout says
# (apt 2.6 fails at once): tried again every APT_POLL_S seconds, up to APT_LOCK_WAIT_S.
apt_update() {
    local waited=0
    until apt_get update; do
        if ! grep -q "Could not get lock" "$log" || [ "$waited" -ge "$APT_LOCK_WAIT_S" ]; then
            return 1
        fi
        if [ "$waited" -eq 0 ]; then
            echo "  waiting up to ${APT_LOCK_WAIT_S} s for another apt: $(lock_holder)"
        fi
        sleep "$APT_POLL_S"
        waited=$((waited + APT_POLL_S))
    done
}

# Who holds the lock apt-get could not get, from its output in $log (empty when not said).
lock_holder() {
    local held='.*Could not get lock \([^ ]*\)\. It is held by \(process [0-9]* ([^)]*)\).*'
    sed -n "s/$held/\\1 is held by \\2/p" "$log" | tail -n 1
}

# Why apt-get failed, in one line: the lock it could not get, else its first error.
apt_reason() {
    if grep -q "Could not get lock" "$log"; then
        local holder
        holder=$(lock_holder)
        echo "${holder:-the package lock is held by another apt or dpkg} still after" \
             "${APT_LOCK_WAIT_S} s; run this command again once that one is done"
    else
        local error
        error=$(sed -n 's/^E: //p' "$log" | head -n 1)
        echo "${error:-$(last_line "$log")}"
    fi
}

try_debian_pocl() {
    local what="Debian's pocl-opencl-icd (apt-get)"
    if ! command -v apt-get >/dev/null; then
        echo "  $what: not tried: no apt-get here"
        return 1
    fi
    if ! can_install_packages; then
        echo "  $what: not tried: installing a system package needs root or password-less sudo"
        return 1
    fi
    echo "  $what: installing (apt-get waits up to ${APT_LOCK_WAIT_S} s for another apt or dpkg)"
    if ! apt_update; then
        echo "  $what: apt-get update failed: $(apt_reason)"
        return 1
    fi
    if ! apt_get install -y --no-install-recommends pocl-opencl-icd; then
        echo "  $what: apt-get install failed: $(apt_reason)"
        return 1
    fi
    try_device "$what"
}

# The tries, each saying what it found, until one gives a device; status 1, with what to install,
# when none did, or at once when the check itself fails. PyPI's PoCL only for a command that runs
# in .venv ($1 names its extras; empty for tox, whose environments have packages of their own).
opencl_device() {  # $1: the extras of the command, or "" when tox runs it
    local status=0
    try_device "the drivers installed" || status=$?
    if [ "$status" -eq 1 ] && [ -n "$1" ]; then
        status=0
        try_pypi_pocl "$1" || status=$?
    fi
    if [ "$status" -eq 1 ]; then
        status=0
        try_debian_pocl || status=$?
    fi
    case "$status" in
        0) return 0 ;;
        2) echo "the device check itself fails: fix that first (its error is above)" >&2 ;;
        *) echo "no OpenCL device builds and runs kernels (each try above says why)." \
                "$INSTALL_HINT" >&2 ;;
    esac
    return 1
}

# Lets tox find the CPythons pyenv holds besides the one in use (pyenv's shims answer only for
# the versions PYENV_VERSION names) and says which; nothing where pyenv is absent. No registry
# offers another CPython to CI's Debian 12: its apt has python3.11 alone, and PyPI's installers
# of one (pbs-installer, uv) download it from elsewhere.
other_pythons() {
    if ! command -v pyenv >/dev/null; then
        echo "  no pyenv: tox looks for python3.X on PATH"
        return 0
    fi
    local held
    held=$(pyenv versions --bare --skip-aliases 2>/dev/null | grep -E '^3\.[0-9]+\.[0-9]+$' |
           paste -s -d ' ') || true
    if [ -z "$held" ]; then
        echo "  pyenv holds no CPython 3"
        return 0
    fi
    PYENV_VERSION="${PYENV_VERSION:-$(pyenv version-name 2>/dev/null || echo system)}:${held// /:}"
    export PYENV_VERSION
    echo "  pyenv's CPythons, for tox's py3XX environments: $held"
}

# tox, its output also in $log; says again at the end which environments skipped and why. With
# CLSPMV_DISCARD_TOX_ENVS=1 and no tox options (what .ci/run asks: CI's disk holds one
# environment's packages at a time, not the 4-5 GB of all ten), one tox run per environment of
# env_list, each environment's folder deleted once it ran, then which failed.
run_tox() {
    local status=0
    if [ "${CLSPMV_DISCARD_TOX_ENVS:-}" = 1 ] && [ $# -eq 0 ]; then
        local env envs failed=""
        envs=$(tox -l) || { echo "tox -l failed: no environment to run" >&2; return 1; }
        if [ -z "$envs" ]; then
            echo "tox -l lists no environment: nothing would be tested" >&2
            return 1
        fi
        : >"$log"
        for env in $envs; do
            tox -e "$env" 2>&1 | tee -a "$log" || failed+=" $env"
            rm -rf ".tox/$env"
        done
        if [ -n "$failed" ]; then
            echo "tox environments that failed:$failed"
            status=1
        fi
    else
        tox "$@" 2>&1 | tee "$log" || status=$?
    fi
    grep -E '^SKIPPED ENVIRONMENT ' "$log" || true
    sed -n 's/^  \([^ ]*\): SKIP .*/SKIPPED ENVIRONMENT \1: tox found no such Python here/p' "$log"
    return "$status"
}

main() {
    [ $# -ge 1 ] || usage
    cd "$(dirname "${BASH_SOURCE[0]}")"
    export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
    # extras: .venv's; runner: what else .venv needs; device_extras: those PyPI's PoCL is
    # installed beside when it is tried ("" for tox, which does not see .venv's packages)
    local command=$1 extras runner device_extras
    shift
    case "$command" in
        bench) extras="plot,mkl" runner="" device_extras="plot,mkl" ;;
        # tox installs each environment's extras (tox.ini); .venv gets the test tools too, for
        # running pytest in it by hand.
        test) extras="test" runner="tox>=4" device_extras="" ;;
        *) usage ;;
    esac

    start=$SECONDS
    step "Python environment: .venv"
    [ -x .venv/bin/python ] || "${PYTHON:-python3}" -m venv .venv
    # shellcheck disable=SC1091
    source .venv/bin/activate
    python --version
    python -m pip install -q -e ".[$extras]" ${runner:+"$runner"}

    step "OpenCL device"
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    opencl_device "$device_extras" || exit 1

    case "$command" in
        bench)
            step "clspmv bench $*"
            clspmv devices
            clspmv bench "$@"
            ;;
        test)
            clspmv devices
            step "other Pythons"
            other_pythons
            step "tox $*"
            run_tox "$@"
            step "tests passed"
            ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
