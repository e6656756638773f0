"""tools/cpu_vs_mkl.py with clspmv's products waited for by polling (on) or blocking (off),
whatever the device. Usage: python poll_rounds.py on|off CPU_VS_MKL_ARGS..."""
import sys
sys.path.insert(0, "tools")
import clspmv
import cpu_vs_mkl
mode = sys.argv.pop(1)
clspmv.Device.polls_kernels = property(lambda self: mode == "on")
sys.exit(cpu_vs_mkl.main(sys.argv[1:]))
