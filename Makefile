# copyfuzz — build the executors (one per routine), the native tests, and run them.
#
#   make                      every routine's executor for ARCH/XLEN
#   make deps                 install what is missing (Debian packages, .venv)
#   make check                deps, build, C unit tests (ASan+UBSan), pytest
#   make O=/tmp/out ...       build elsewhere
#
# Kernel habits: ARCH=riscv, CROSS_COMPILE=riscv64-linux-gnu-, CC=, V=1.

ARCH          ?= riscv
XLEN          ?= 64
CROSS_COMPILE ?= riscv64-linux-gnu-
QEMU          ?= qemu-riscv$(XLEN)
HOSTCC        ?= clang
O             ?= build
PYTHON        ?= .venv/bin/python

ifeq ($(origin CC),default)
CC := $(CROSS_COMPILE)gcc
endif
OBJCOPY ?= $(CROSS_COMPILE)objcopy
READELF ?= $(CROSS_COMPILE)readelf
NM      ?= $(CROSS_COMPILE)nm

ifeq ($(V),1)
Q :=
else
Q := @
endif

ifeq ($(XLEN),64)
ARCH_FLAGS := -march=rv64gc -mabi=lp64d
LIBGCC     := -lgcc
else ifeq ($(XLEN),32)
ARCH_FLAGS := -march=rv32gc -mabi=ilp32d
LIBGCC     :=  # RV64-only in Debian: harness/libc.c has the helpers
else
$(error XLEN must be 64 or 32)
endif

BUILD   := $(O)/$(ARCH)$(XLEN)
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
TFLAGS  := $(ARCH_FLAGS) -std=c11 -O2 -g $(WARN) -ffreestanding -fno-pic -fno-pie \
           -fno-stack-protector -fno-tree-loop-distribute-patterns -mcmodel=medany \
           -mno-relax -Iharness -Iref
ASFLAGS_ROUTINE := -Iarch/$(ARCH)/include

HARNESS_C := harness/executor.c harness/arena.c harness/cases.c harness/extable.c \
             harness/trap.c harness/util.c harness/libc.c ref/ref.c
HARNESS_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(HARNESS_C)) $(BUILD)/obj/harness/call.o
HEADERS := $(wildcard harness/*.h ref/*.h)

# Routines: every arch/$(ARCH)/*.S and arch/$(ARCH)/mutants/*.S, described by
# their " * copyfuzz: key=value" header lines (docs/routines.md).
ROUTINE_SRCS := $(sort $(wildcard arch/$(ARCH)/*.S arch/$(ARCH)/mutants/*.S))
routine_name  = $(patsubst arch/%.S,%,$(1))
routine_meta  = $(shell sed -n '1,40s/^[ /*]*copyfuzz: $(2)=\([^ ]*\).*/\1/p' $(1) | head -n 1)
EXECUTORS    := $(foreach s,$(ROUTINE_SRCS),$(BUILD)/$(call routine_name,$(s)).elf)

.PHONY: all deps check test-c test-py clean list-executors plugin fuzz-targets
# The host-side parts are named here because prerequisites expand as they are read.
PLUGIN           := $(O)/host/cfplugin.so
LIBFUZZER_TARGET := $(O)/host/fuzz/copyfuzz_fuzzer
AFL_TARGET       := $(O)/host/fuzz/copyfuzz_afl_fuzzer
LIBCFREF         := $(O)/host/libcfref.so
all: $(EXECUTORS) $(PLUGIN) $(LIBFUZZER_TARGET) $(AFL_TARGET) $(LIBCFREF)

list-executors:
	@echo $(EXECUTORS)

$(BUILD)/obj/%.o: %.c $(HEADERS) Makefile
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(TFLAGS) -c $< -o $@

$(BUILD)/obj/harness/call.o: harness/call.S harness/call.h Makefile
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ARCH_FLAGS) -Iharness -c $< -o $@

# One relocatable harness whose mem* helpers are local: a routine named
# memcpy must neither serve the harness nor be served by it.
$(BUILD)/harness.o: $(HARNESS_OBJS)
	$(Q)$(CC) $(ARCH_FLAGS) -nostdlib -r -o $@.tmp $^
	$(Q)$(OBJCOPY) --localize-symbol=memcpy --localize-symbol=memset \
	  --localize-symbol=memmove --localize-symbol=memcmp $@.tmp $@
	$(Q)rm -f $@.tmp

# Link one executor: $(1) source .S, $(2) output .elf, $(3) routine name,
# $(4) entry symbol, $(5) kind (copy|clear|memcpy), $(6) assembler flags.
# Expanded inside $(eval): hence the doubled dollars.
define EXECUTOR_RECIPE
	@mkdir -p $$(@D)
	$(Q)$(CC) $(ARCH_FLAGS) -g $(6) -c $(1) -o $(2).routine.o
	$(Q)$(OBJCOPY) --rename-section .text=cf_target_text \
	  --rename-section .fixup=cf_target_fixup $(2).routine.o
	$(Q)$(NM) $(2).routine.o | grep -q ' [TtW] $(4)$$$$' || \
	  { echo "$(1): symbol '$(4)' is not defined there" >&2; rm -f $(2).routine.o; exit 2; }
	$(Q)fmt=$$$$(sh harness/extable-format.sh $(READELF) $(2).routine.o) && \
	$(CC) $(TFLAGS) -DCF_TARGET_NAME='"$(3)"' -DCF_TARGET_SYMBOL=$(4) \
	  -DCF_TARGET_KIND=CF_KIND_$(shell echo $(5) | tr a-z A-Z) \
	  -DCF_TARGET_EXTABLE=$$$$fmt -c harness/target.c -o $(2).target.o
	$(Q)$(CC) $(ARCH_FLAGS) -nostdlib -static -no-pie -Wl,--no-relax -o $(2) \
	  $(BUILD)/harness.o $(2).target.o $(2).routine.o $(LIBGCC)
	$(Q)rm -f $(2).routine.o $(2).target.o
endef

# Bundled routines: metadata from their header lines; includes from arch/.
define ROUTINE_RULES
$(BUILD)/$(call routine_name,$(1)).elf: $(1) $(BUILD)/harness.o harness/target.c harness/target.h \
		harness/extable-format.sh $(wildcard arch/$(ARCH)/include/*) Makefile
	@test -n "$(call routine_meta,$(1),symbol)" || \
	  { echo "$(1): no ' * copyfuzz: symbol=...' line (docs/formats.md)" >&2; exit 2; }
	$(call EXECUTOR_RECIPE,$(1),$$@,$(call routine_name,$(1)),$(call routine_meta,$(1),symbol),$(call routine_meta,$(1),kind),$(ASFLAGS_ROUTINE))
endef
$(foreach s,$(ROUTINE_SRCS),$(eval $(call ROUTINE_RULES,$(s))))

# A kernel-style file checked as it is (copyfuzz check): the compat include
# tree stands in for the kernel's headers. Always rebuilt: its own includes
# are not tracked, and a build takes a fraction of a second.
#   make check-executor CHECK_SRC=path/uaccess.S CHECK_SYMBOL=sym CHECK_KIND=copy \
#        CHECK_OUT=build/... [CHECK_DEFS="-DCONFIG_X=1"]
COMPAT_INCLUDE := harness/compat/$(ARCH)/include
CHECK_OUT ?= $(BUILD)/check/$(notdir $(basename $(CHECK_SRC)))-$(CHECK_SYMBOL).elf
.PHONY: check-executor FORCE
check-executor: $(CHECK_OUT)
define CHECK_RULES
$(CHECK_OUT): $(BUILD)/harness.o FORCE
	@test -f "$(CHECK_SRC)" || { echo "$(CHECK_SRC): no such file" >&2; exit 2; }
	$(call EXECUTOR_RECIPE,$(CHECK_SRC),$$@,$(CHECK_SRC):$(CHECK_SYMBOL),$(CHECK_SYMBOL),$(CHECK_KIND),-I$(COMPAT_INCLUDE) -I$(dir $(CHECK_SRC)) $(CHECK_DEFS))
endef
ifneq ($(CHECK_SRC),)
$(eval $(CHECK_RULES))
endif
FORCE:

# ---- native side: unit tests under ASan+UBSan, and the reference for Python ----
HOST_FLAGS := -std=c11 -g -O1 $(WARN) -D_DEFAULT_SOURCE -DCF_HOSTED -Iharness -Iref
SAN_FLAGS  := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
HOST_SRCS  := ref/ref.c harness/cases.c harness/arena.c harness/extable.c

$(O)/host/test_ref: ref/test/test_ref.c $(HOST_SRCS) $(HEADERS) Makefile
	@mkdir -p $(dir $@)
	$(Q)$(HOSTCC) $(HOST_FLAGS) $(SAN_FLAGS) -o $@ ref/test/test_ref.c $(HOST_SRCS)

# The QEMU TCG plugin (a host shared object loaded by qemu-riscv64 -plugin).
$(PLUGIN): plugin/cfplugin.c harness/plugin_abi.h Makefile
	@mkdir -p $(dir $@)
	$(Q)$(HOSTCC) -std=c11 -O2 -g $(WARN) -D_DEFAULT_SOURCE -shared -fPIC -o $@ plugin/cfplugin.c
plugin: $(PLUGIN)

# Fuzz targets: one native driver (fuzz/driver.c) and the oracle, for libFuzzer
# (clang, ASan+UBSan) and AFL++ (afl-clang-fast, libAFLDriver). The routine is
# chosen at run time (COPYFUZZ_EXECUTOR): one build serves every routine.
# The oracle (ref/ref.c) gets no SanitizerCoverage: the coverage that matters is
# the routine's (from the plugin), and comparison tracing of the oracle's
# per-byte loop cost half of every execution (docs/perf.md).
FUZZ_FLAGS := -std=c11 -g -O1 $(WARN) -Iharness -Iref
FUZZ_OBJ   := $(O)/host/fuzz
$(FUZZ_OBJ)/ref-asan.o: ref/ref.c $(HEADERS) Makefile
	@mkdir -p $(dir $@)
	$(Q)$(HOSTCC) $(FUZZ_FLAGS) -fsanitize=address,undefined -c ref/ref.c -o $@
$(FUZZ_OBJ)/ref-plain.o: ref/ref.c $(HEADERS) Makefile
	@mkdir -p $(dir $@)
	$(Q)$(HOSTCC) $(FUZZ_FLAGS) -O2 -c ref/ref.c -o $@
$(LIBFUZZER_TARGET): fuzz/driver.c $(FUZZ_OBJ)/ref-asan.o $(HEADERS) Makefile
	@mkdir -p $(dir $@)
	$(Q)$(HOSTCC) $(FUZZ_FLAGS) -fsanitize=fuzzer,address,undefined -o $@ fuzz/driver.c $(FUZZ_OBJ)/ref-asan.o
# fuzz/afl_cov.c is compiled by plain clang: it writes AFL's map itself.
$(AFL_TARGET): fuzz/driver.c fuzz/afl_cov.c $(FUZZ_OBJ)/ref-plain.o $(HEADERS) Makefile
	@mkdir -p $(dir $@)
	$(Q)$(HOSTCC) $(FUZZ_FLAGS) -c fuzz/afl_cov.c -o $(@D)/afl_cov.o
	$(Q)AFL_QUIET=1 afl-clang-fast $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ fuzz/driver.c \
	  $(FUZZ_OBJ)/ref-plain.o $(@D)/afl_cov.o
fuzz-targets: $(LIBFUZZER_TARGET) $(AFL_TARGET)

# The enumeration and the oracle for the tool (tool/copyfuzz/plan.py) and the tests, via ctypes.
$(LIBCFREF): ref/ref.c harness/cases.c $(HEADERS) Makefile
	@mkdir -p $(dir $@)
	$(Q)$(HOSTCC) $(HOST_FLAGS) -O2 -shared -fPIC -o $@ ref/ref.c harness/cases.c

test-c: $(O)/host/test_ref
	$(Q)$(O)/host/test_ref

# pytest (testpaths in pytest.ini: tests/ and fuzz/); its "no tests ran" (exit 5) is a failure, never a pass.
test-py: all
	$(Q)$(PYTHON) -m pytest -q; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; exit $$rc

deps:
	$(Q)sh scripts/deps.sh

check: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory test-c
	$(Q)$(MAKE) --no-print-directory test-py

clean:
	rm -rf $(O)
