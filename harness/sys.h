/* SPDX-License-Identifier: MIT */
/*
 * sys.h - the few system calls the harness makes.
 *
 * The executor is freestanding (Debian ships no rv32 C library), so these are
 * raw system calls: the instruction and the numbers are each architecture's
 * (harness/arch/<arch>/arch_sys.h). Built natively (unit tests of the arena and
 * case generator), the same names map onto libc.
 */
#ifndef CF_SYS_H
#define CF_SYS_H

#include <stddef.h>
#include <stdint.h>

#define CF_PROT_NONE 0
#define CF_PROT_READ 1
#define CF_PROT_RW 3

#define CF_SIGILL 4
#define CF_SIGTRAP 5
#define CF_SIGBUS 7
#define CF_SIGFPE 8
#define CF_SIGSEGV 11
#define CF_SIGALRM 14

#ifndef CF_HOSTED

/* cf_syscall6 and the CF_NR_* numbers: harness/arch/$(ARCH)/arch_sys.h (-Iharness/arch/$(ARCH)). */
#include "arch_sys.h"

#define cf_syscall3(nr, a, b, c) cf_syscall6(nr, (long)(a), (long)(b), (long)(c), 0, 0, 0)

static inline long cf_read(int fd, void *buf, size_t len)
{
	return cf_syscall3(CF_NR_read, fd, buf, len);
}

static inline long cf_write(int fd, const void *buf, size_t len)
{
	return cf_syscall3(CF_NR_write, fd, buf, len);
}

static inline int cf_close(int fd)
{
	return (int)cf_syscall3(CF_NR_close, fd, 0, 0);
}

/* No core files: a routine that kills its executor with a signal in every case would
 * leave one per case (qemu-user writes the guest's and the host's). */
static inline void cf_no_core_files(void)
{
	unsigned long zero[2] = {0, 0}; /* struct rlimit: rlim_cur, rlim_max */
	cf_syscall3(CF_NR_setrlimit, 4 /* RLIMIT_CORE */, zero, 0);
}

static inline __attribute__((noreturn)) void cf_exit(int code)
{
	for (;;)
		cf_syscall3(CF_NR_exit_group, code, 0, 0);
}

/* Returns the mapping, or NULL (raw mmap returns -errno on failure). */
static inline void *cf_mmap_anon(size_t len, int prot)
{
	long r = cf_syscall6(CF_NR_mmap, 0, (long)len, prot, 0x22 /* PRIVATE|ANON */, -1, 0);
	return (r < 0 && r > -4096) ? NULL : (void *)r;
}

static inline int cf_mprotect(void *addr, size_t len, int prot)
{
	return (int)cf_syscall3(CF_NR_mprotect, addr, len, prot);
}

/* Map len bytes of an inherited fd shared with others (the plugin's memfd). */
static inline void *cf_mmap_shared_fd(int fd, size_t len)
{
	long r = cf_syscall6(CF_NR_mmap, 0, (long)len, CF_PROT_RW, 0x01 /* SHARED */, fd, 0);
	return (r < 0 && r > -4096) ? NULL : (void *)r;
}

static inline int cf_munmap(void *addr, size_t len)
{
	return (int)cf_syscall3(CF_NR_munmap, addr, len, 0);
}

/* FUTEX_WAIT on a shared (not FUTEX_PRIVATE) word, so that another process waiting on the
 * same page of a shared mapping meets it: sleeps while *word == val, at most ms
 * milliseconds; 0, or -errno (-11 EAGAIN: the word had changed, -110 ETIMEDOUT, -4 EINTR). */
static inline long cf_futex_wait(uint32_t *word, uint32_t val, uint32_t ms)
{
	int64_t ts[2] = {ms / 1000, (int64_t)(ms % 1000) * 1000000}; /* a 64-bit timespec */
	return cf_syscall6(CF_NR_futex, (long)word, 0 /* FUTEX_WAIT */, (long)val, (long)ts, 0, 0);
}

/* FUTEX_WAKE: wakes the one waiter a handshake can have. */
static inline long cf_futex_wake(uint32_t *word)
{
	return cf_syscall3(CF_NR_futex, word, 1 /* FUTEX_WAKE */, 1);
}

#else /* hosted: native unit tests */

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static inline long cf_read(int fd, void *buf, size_t len)
{
	return read(fd, buf, len);
}
static inline long cf_write(int fd, const void *buf, size_t len)
{
	return write(fd, buf, len);
}
static inline int cf_close(int fd)
{
	return close(fd);
}
static inline __attribute__((noreturn)) void cf_exit(int code)
{
	_exit(code);
}

static inline void *cf_mmap_anon(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static inline int cf_mprotect(void *addr, size_t len, int prot)
{
	return mprotect(addr, len, prot);
}
static inline int cf_munmap(void *addr, size_t len)
{
	return munmap(addr, len);
}

#endif

#endif /* CF_SYS_H */
