/* SPDX-License-Identifier: MIT */
/*
 * native_fault.c - the host's own cost of one SIGSEGV round trip (fault,
 * handler, sigreturn), for docs/perf.md: the floor under any guard-page
 * harness on this machine, with or without QEMU. x86-64 Linux only.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

static void skip_load(int sig, siginfo_t *si, void *uc_)
{
	(void)sig, (void)si;
	ucontext_t *uc = uc_;
	uc->uc_mcontext.gregs[REG_RIP] += 2; /* the 2-byte "mov (%rbx),%al" below */
}

int main(void)
{
	const int rounds = 200000;
	volatile char *guard = mmap(0, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct sigaction sa = {0};
	sa.sa_sigaction = skip_load;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, 0);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < rounds; i++)
		__asm__ volatile("mov (%%rbx), %%al" ::"b"(guard) : "al", "memory");
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	printf("%.3f\n", ns / rounds / 1000.0);
	return 0;
}
