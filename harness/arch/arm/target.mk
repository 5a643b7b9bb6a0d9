# 32-bit ARM (EABI, hard float): Debian's arm-linux-gnueabihf cross toolchain, qemu-arm.
# Read by the Makefile after ARCH is known; everything here is this architecture's own.
# The register widths (XLEN) it builds for, the default first.
WIDTHS        := 32
XLEN          ?= $(firstword $(WIDTHS))
CROSS_COMPILE ?= arm-linux-gnueabihf-
QEMU          ?= qemu-arm
BUILD_NAME    := arm

# ARM state throughout (the toolchain defaults to Thumb-2): the trampoline and the signal
# handler resume routines in ARM state, as kernels without CONFIG_THUMB2_KERNEL run.
ARCH_FLAGS  := -marm -march=armv7-a -mfpu=vfpv3-d16 -mfloat-abi=hard
LIBGCC      := -lgcc -Wl,-z,noexecstack  # the routine objects carry no .note.GNU-stack
ARCH_CFLAGS := -mno-unaligned-access
# A routine: no PIC/PIE, as the kernel assembles it.
ROUTINE_FLAGS := -fno-pic -fno-pie

# Relocations against __ex_table (harness/extable-format.sh): ARM kernels have only ever
# had absolute { insn, fixup } pairs.
EXTABLE_ABS_RELOCS := R_ARM_ABS32
EXTABLE_REL_RELOCS := R_ARM_REL32|R_ARM_PREL31

routine_march =
