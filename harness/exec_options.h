/* The executor's command-line options: one row each, X(ID, "name", ARG, "meaning"), ARG
 * NUM (a number, decimal or 0x), WORD (a word the executor checks) or FLAG (no value).
 * harness/executor.c parses them from this table; the fuzz driver
 * (fuzz/executor_channel.c) and the tool (tool/copyfuzz/execopts.py) spell an option
 * through its row, never by hand. docs/executor.md describes them. */
#ifndef CF_EXEC_OPTIONS_H
#define CF_EXEC_OPTIONS_H

#define CF_EXEC_OPTIONS(X)                                                                        \
	X(TIMEOUT_MS, "timeout-ms", NUM, "the per-case watchdog, 1..600000 ms")                   \
	X(MAX_LEN, "max-len", NUM, "sweep: the longest n")                                        \
	X(MIN_LEN, "min-len", NUM, "sweep: the shortest n")                                       \
	X(RANDOM, "random", NUM, "sweep: this many random cases after the exhaustive ones")       \
	X(SEED, "seed", NUM, "sweep: the random cases' seed")                                     \
	X(RANDOM_MAX_LEN, "random-max-len", NUM, "sweep: the random cases' longest n")            \
	X(STOP_MASK, "stop-mask", NUM, "sweep: stop once every class in this mask was seen")      \
	X(MAX_HANGS, "max-hangs", NUM, "sweep: stop after this many hangs")                       \
	X(OBSERVE_FD, "observe-fd", NUM, "the observe block's memfd (the fuzz driver's)")         \
	X(CASES_FD, "cases-fd", NUM, "read case records here (after the seal key)")               \
	X(RECORDS_FD, "records-fd", NUM, "write result records here")                             \
	X(CHANNEL_FD, "channel-fd", NUM, "serve: the shared-memory channel block's memfd")        \
	X(CONTROL_FD, "control-fd", NUM, "the control block's memfd (counts, the current case)")  \
	X(START, "start", NUM, "sweep: the first case id")                                        \
	X(END, "end", NUM, "sweep: the case id to stop before")                                   \
	X(PLUGIN_FD, "plugin-fd", NUM, "the QEMU plugin's shared memory (qemu -plugin ...,fd=N)") \
	X(PLUGIN_COVERAGE_ONLY, "plugin-coverage-only", FLAG,                                     \
	  "the plugin counts; no memory audit")                                                   \
	X(BARE, "bare", FLAG, "no oracle, no destination restore (bench)")                        \
	X(GRANULE, "granule", WORD, "16: faults at MTE tag granules too (arm64)")                 \
	X(SHARD, "shard", WORD, "sweep: I/K, the cases whose id is I modulo K")                   \
	X(PROFILE, "profile", WORD, "sweep: linux or exact")

#define CF_X_EXEC_OPTION_ID(id, name, arg, about) CF_OPT_##id,
enum cf_exec_option { CF_EXEC_OPTIONS(CF_X_EXEC_OPTION_ID) CF_NUM_EXEC_OPTIONS };
enum cf_exec_option_arg { CF_OPT_ARG_NUM, CF_OPT_ARG_WORD, CF_OPT_ARG_FLAG };

/* An option as it is written on the command line ("--" and its name), by id. */
#define CF_X_EXEC_OPTION_NAME(id, name, arg, about) "--" name,
__attribute__((unused)) static const char *const cf_exec_option_names[CF_NUM_EXEC_OPTIONS] = {
	CF_EXEC_OPTIONS(CF_X_EXEC_OPTION_NAME)};
#define CF_X_EXEC_OPTION_ARG(id, name, arg, about) CF_OPT_ARG_##arg,
__attribute__((unused)) static const unsigned char cf_exec_option_args[CF_NUM_EXEC_OPTIONS] = {
	CF_EXEC_OPTIONS(CF_X_EXEC_OPTION_ARG)};

#endif
