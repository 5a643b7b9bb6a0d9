/* SPDX-License-Identifier: MIT */
/*
 * generic_nr.h - the asm-generic system call numbers (include/uapi/asm-generic/unistd.h),
 * which RISC-V and arm64 share: only the ones the harness makes.
 */
#ifndef CF_GENERIC_NR_H
#define CF_GENERIC_NR_H

#define CF_NR_close 57
#define CF_NR_read 63
#define CF_NR_write 64
#define CF_NR_exit_group 94
#define CF_NR_setitimer 103
#define CF_NR_setrlimit 164
#define CF_NR_sigaltstack 132
#define CF_NR_rt_sigaction 134
#define CF_NR_rt_sigreturn 139
#define CF_NR_prctl 167
#define CF_NR_munmap 215
#define CF_NR_mmap 222
#define CF_NR_mprotect 226
#if __SIZEOF_POINTER__ == 4
#define CF_NR_futex 422 /* futex_time64: 32-bit targets have no futex with a 64-bit time */
#else
#define CF_NR_futex 98
#endif

#endif /* CF_GENERIC_NR_H */
