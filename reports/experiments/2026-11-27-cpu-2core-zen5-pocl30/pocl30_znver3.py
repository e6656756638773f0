"""A copy of the `pocl` extra's PoCL 3.0 (pyopencl 2026.1.4's bundled libpocl, PoCL 3.0-rc2,
LLVM 14.0.6) that names the host CPU `znver3`, for measurements on a CPU its LLVM does not know.

Why: LLVM 14 predates AMD's family 26 (Zen 5); its getHostCPUName answers `generic`, which
PoCL 3.0 passes to clang as the target CPU, and clang refuses it ("unknown target CPU
'generic'"), so this PoCL builds no kernel on the project's Zen 5. PoCL 3.1 reads
POCL_LLVM_CPU_NAME for this; 3.0-rc2 reads nothing. The patch makes pocl_get_llvm_cpu_name
skip the LLVM query and take its fallback branch with the string "znver3" (already in the
library's LLVM CPU table) instead of "generic": 3 instructions, byte-checked below. Zen 5 runs
every znver3 instruction (AVX2, FMA, BMI2); the kernels get no AVX-512, which LLVM 14 would
give only to a CPU it knows has it.

A measurement aid, not part of clspmv: it writes the copy beside the original (same folder, so
that its hwloc and kernel library are found) and an ICD vendors folder naming it; run with
OCL_ICD_VENDORS=<that folder> (which also hides Debian's /etc/OpenCL/vendors: PoCL 3.1 is then
absent, and the copy answers as the PoCL platforms of pyopencl's list, devices 1:0 and 2:0).

    python pocl30_znver3.py /tmp/pocl30p    # then OCL_ICD_VENDORS=/tmp/pocl30p/vendors ...
"""

import base64
import hashlib
import struct
import sys
from pathlib import Path

import pyopencl

LIB = Path(pyopencl.__file__).parent / ".libs" / "libpocl-21062cec.so"
SHA256 = "0hSuzmDfc8ddimeNM-SlH05bWUdy3HSJG1RR-QnbYCU"  # the wheel RECORD's hash of LIB
CALL = 0x7de1b6  # pocl_get_llvm_cpu_name: call llvm::sys::getHostCPUName
MALLOC_SIZE, LENGTH, LEA = 0x7de1f0, 0x7de1f5, 0x7de1fa  # its fallback: malloc(8), 7, "generic"
ZNVER3 = 0x435dfde  # "znver3\0" in .rodata (file offset = address in both sections)


def main(out: Path) -> None:
    data = bytearray(LIB.read_bytes())
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    if digest != SHA256:
        sys.exit(f"{LIB} is not the PoCL 3.0-rc2 library this patch was written for")
    assert data[CALL] == 0xE8 and data[ZNVER3:ZNVER3 + 7] == b"znver3\0"
    assert data[MALLOC_SIZE:LEA + 3] == bytes([0xBF, 8, 0, 0, 0, 0xBB, 7, 0, 0, 0,
                                               0x48, 0x8D, 0x2D])
    data[CALL:CALL + 5] = bytes([0x31, 0xD2, 0x0F, 0x1F, 0x00])  # xor edx, edx (an empty name)
    data[MALLOC_SIZE:LENGTH + 5] = bytes([0xBF, 7, 0, 0, 0, 0xBB, 6, 0, 0, 0])  # malloc(7), 6
    data[LEA + 3:LEA + 7] = struct.pack("<i", ZNVER3 - (LEA + 7))  # lea "znver3"(%rip), %rbp
    copy = LIB.with_name("libpocl-znver3-patch.so")
    copy.write_bytes(data)
    copy.chmod(0o755)
    (out / "vendors").mkdir(parents=True, exist_ok=True)
    (out / "vendors" / "pocl30-znver3.icd").write_text(f"{copy}\n")
    print(f"OCL_ICD_VENDORS={out / 'vendors'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
