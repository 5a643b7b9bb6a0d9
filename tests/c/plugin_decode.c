/* SPDX-License-Identifier: MIT */
/*
 * plugin_decode.c - cfplugin.c's instruction decoders on instructions given as hex
 * (tests/test_plugin_decode.py).
 *
 *   plugin_decode TARGET_NAME HEX...   (HEX: an instruction's bytes in memory order,
 *                                      "-" for an instruction whose bytes QEMU withholds)
 *
 * prints "may_access_memory vector_class" per instruction, as the plugin decides them
 * for a guest whose qemu_info_t says TARGET_NAME. The plugin is compiled in whole with
 * this file standing in for QEMU: the instruction's bytes and size come from the
 * command line, and every other API function aborts (the decoders never call one, so a
 * decoder that did would fail the test).
 */
#include "../../plugin/cfplugin.c"

struct qemu_plugin_insn {
	const uint8_t *data;
	size_t size;
};

const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn)
{
	return insn->data;
}

size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn)
{
	return insn->size;
}

/* Never called by the decoders: present so the plugin links into a program. */
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb)
{
	(void)id;
	(void)cb;
	abort();
}

size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb)
{
	(void)tb;
	abort();
}

struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx)
{
	(void)tb;
	(void)idx;
	abort();
}

uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn)
{
	(void)insn;
	abort();
}

void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags, void *udata)
{
	(void)insn;
	(void)cb;
	(void)flags;
	(void)udata;
	abort();
}

void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
				      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
				      void *udata)
{
	(void)insn;
	(void)cb;
	(void)flags;
	(void)rw;
	(void)udata;
	abort();
}

bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info)
{
	(void)info;
	abort();
}

unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info)
{
	(void)info;
	abort();
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: plugin_decode TARGET_NAME HEX...\n");
		return 2;
	}
	target = target_row(argv[1]);
	for (int i = 2; i < argc; i++) {
		uint8_t bytes[16];
		struct qemu_plugin_insn insn = {bytes, strlen(argv[i]) / 2};

		if (strcmp(argv[i], "-") == 0) {
			insn.data = NULL;
			insn.size = 4;
		} else if (insn.size == 0 || insn.size > sizeof(bytes) || strlen(argv[i]) % 2) {
			fprintf(stderr, "plugin_decode: bad hex %s\n", argv[i]);
			return 2;
		}
		for (size_t k = 0; insn.data && k < insn.size; k++) {
			unsigned int v;

			if (sscanf(argv[i] + 2 * k, "%2x", &v) != 1) {
				fprintf(stderr, "plugin_decode: bad hex %s\n", argv[i]);
				return 2;
			}
			bytes[k] = (uint8_t)v;
		}
		printf("%d %u\n", may_access_memory(&insn, insn.size),
		       vector_class(&insn, insn.size));
	}
	return 0;
}
