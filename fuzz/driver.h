/* SPDX-License-Identifier: MIT */
/*
 * driver.h - what the three parts of the native fuzz driver share:
 *   driver_config.c     the environment, the bundle, CPU pinning
 *   executor_channel.c  the persistent executor: start, one case there and back, stop
 *   driver.c            the fuzz entry points: decode an input, run the oracle, report
 */
#ifndef CF_DRIVER_H
#define CF_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "observe_abi.h"
#include "plugin_abi.h"
#include "records.h"

/* ---- configuration: driver_config.c ---- */

/* The driver's environment variables, from the registry (envs.def): CF_ENV_EXECUTOR ... */
enum cf_env_id {
#define CF_ENV(name, dflt, help) CF_ENV_##name,
#define CF_ENV_OTHER(name, dflt, help, reader)
#include "envs.def"
#undef CF_ENV
#undef CF_ENV_OTHER
	CF_ENV_COUNT
};
/* Its value if set, else its default from the registry (NULL: unset, no default). */
const char *cf_env(enum cf_env_id id);
/* Whether it is set at all (to "" too). */
int cf_env_given(enum cf_env_id id);

struct cf_driver_cfg {
	const char *executor, *qemu, *plugin, *findings, *coverage, *seen;
	const char *loader, *libdir; /* the bundled qemu's own ld.so and libraries, else NULL */
	const char *kind_name, *profile_name; /* as given (or bundled) */
	int print_case;
	int go_on; /* COPYFUZZ_ON_FINDING=go-on: a finding is written, not aborted on */
	uint16_t kind, profile;
	uint64_t max_len, timeout_ms, answer_slack_ms;
	uint32_t granule; /* COPYFUZZ_GRANULE: 0, or CF_GRANULE_MTE */
};
extern struct cf_driver_cfg cf_cfg;

__attribute__((noreturn)) void cf_die(const char *what);
/* cf_cfg from the environment and, where that is silent, the bundle beside the binary. */
void cf_config_load(const char *argv0);
/* A libFuzzer process that only starts others (-jobs, -fork, -merge's outer run). */
int cf_is_libfuzzer_parent(int argc, char **argv);
void cf_pin_to_one_cpu(void);
/* Every process forked from here on dies with its parent; a forkserver (AFL++) dies with
 * afl-fuzz. With COPYFUZZ_WATCH_PID, a thread ends the process once that one has ended,
 * and the input loop asks cf_watched_has_ended too (driver.c: the thread alone was seen to
 * miss the end under heavy load, cause not found); cf_watched_stop says why and exits. */
void cf_processes_init(int forkserver);
int cf_watched_has_ended(void);
__attribute__((noreturn)) void cf_watched_stop(void);

/* ---- the executor channel: executor_channel.c ---- */

/* How one exchange ended. Not OK: the executor is to be stopped (its wait status then
 * says how it ended) and the case reported. */
enum cf_channel_status {
	CF_CHANNEL_OK = 0,
	CF_CHANNEL_DIED, /* the executor died before or while answering: a crash */
	CF_CHANNEL_HUNG, /* no answer past the executor's own watchdog: a hang */
	CF_CHANNEL_OUT_OF_STEP, /* an answer that is not this case's result */
	CF_CHANNEL_UNSEALED, /* a record without this channel's seal: forged, a crash */
};

extern struct cf_plugin_shm *cf_pshm; /* NULL without the plugin */
extern struct cf_observe_shm *cf_oshm;

/* The memory the executor (and the plugin) share with the driver: once, before a start. */
void cf_channel_init(void);
void cf_channel_start(void);
/* Kills and reaps the executor: its wait status (-1: none was running). */
int cf_channel_stop(void);
/* The executor of this process, starting one if there is none: after a fork (AFL++'s
 * forkserver), the parent's executor is left alone. */
void cf_channel_ensure(void);
enum cf_channel_status cf_channel_exchange(const struct cf_case *c, struct cf_result *r);
/* What happened, for a finding: the status and how the stopped executor ended. */
void cf_channel_describe(enum cf_channel_status st, int wait_status, char *buf, size_t size);

#endif /* CF_DRIVER_H */
