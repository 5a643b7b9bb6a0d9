# RISC-V: RV64 and RV32 (XLEN), both from Debian's riscv64 cross toolchain. Read by the
# Makefile after ARCH is known; everything here is this architecture's own.
# The register widths (XLEN) it builds for, the default first.
WIDTHS        := 64 32
XLEN          ?= $(firstword $(WIDTHS))
CROSS_COMPILE ?= riscv64-linux-gnu-
QEMU          ?= qemu-riscv$(XLEN)
BUILD_NAME    := riscv$(XLEN)

ifeq ($(XLEN),64)
ARCH_FLAGS := -march=rv64gc -mabi=lp64d
LIBGCC     := -lgcc
else  # 32: the Makefile refuses an XLEN not in WIDTHS
ARCH_FLAGS := -march=rv32gc -mabi=ilp32d
LIBGCC     :=  # RV64-only in Debian: harness/libc.c has the helpers
endif

# The harness's C: medany, and no relaxation (gp-relative addressing would break if a
# routine clobbered gp, and the trampoline must survive exactly that).
ARCH_CFLAGS := -mcmodel=medany -mno-relax
# How a routine is assembled, ours or a file from elsewhere: as the kernel and bare-metal
# libraries build (no PIC/PIE, medany), so `la sym` is auipc+addi and not a GOT load, and
# the listing shows the file's own instructions (the compiler's default here is PIE).
ROUTINE_FLAGS := -fno-pic -fno-pie -mcmodel=medany

# Relocations against __ex_table (harness/extable-format.sh): absolute pointer pairs,
# or the 5.18+ relative entries (ADD32/SUB32 pairs, or 32_PCREL).
EXTABLE_ABS_RELOCS := R_RISCV_(64|32)
EXTABLE_REL_RELOCS := R_RISCV_(ADD32|SUB32|32_PCREL)

# A routine's " * copyfuzz: isa=rv64gcv" line: its -march (the same extensions at rv32
# under XLEN=32), after ARCH_FLAGS so that it wins; the harness stays rv64gc/rv32gc.
routine_march = $(if $(call routine_meta,$(1),isa),-march=$(subst rv64,rv$(XLEN),$(call routine_meta,$(1),isa)))
