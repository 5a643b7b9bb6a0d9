# arm64 (AArch64, LP64): Debian's aarch64 cross toolchain, qemu-aarch64. Read by the
# Makefile after ARCH is known; everything here is this architecture's own.
# The register widths (XLEN) it builds for, the default first.
WIDTHS        := 64
XLEN          ?= $(firstword $(WIDTHS))
CROSS_COMPILE ?= aarch64-linux-gnu-
QEMU          ?= qemu-aarch64
BUILD_NAME    := arm64

# The kernel's own baseline (no LSE, no SVE); -mgeneral-regs-only keeps the compiler from
# using FP/SIMD registers in the harness, whose FPSR carries the user-access stand-in.
ARCH_FLAGS  := -march=armv8-a
LIBGCC      := -lgcc
ARCH_CFLAGS := -mgeneral-regs-only -mcmodel=small
# A routine: no PIC/PIE (adrp+add, never a GOT load), as the kernel assembles it.
ROUTINE_FLAGS := -fno-pic -fno-pie

# Relocations against __ex_table (harness/extable-format.sh): absolute .quad pairs
# (through 4.5), relative pairs (4.6-5.15) or 12-byte relative entries (5.16 onward).
EXTABLE_ABS_RELOCS := R_AARCH64_ABS64
EXTABLE_REL_RELOCS := R_AARCH64_PREL32

routine_march =
