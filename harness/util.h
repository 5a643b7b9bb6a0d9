/* SPDX-License-Identifier: MIT */
/* util.h - the little a freestanding program needs: strings, numbers, output. */
#ifndef CF_UTIL_H
#define CF_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

size_t cf_strlen(const char *s);
bool cf_streq(const char *a, const char *b);
/* Parse a decimal or 0x-hex unsigned number; false on junk or overflow. */
bool cf_parse_u64(const char *s, uint64_t *out);

/* Buffered output to cf_out_fd (stdout unless the executor got --records-fd);
 * flushed explicitly. */
extern int cf_out_fd;
void cf_out(const void *p, size_t len);
void cf_out_str(const char *s);
void cf_out_hex(uint64_t v);
void cf_out_dec(uint64_t v);
void cf_out_flush(void);

/* Unbuffered stderr messages. */
void cf_err(const char *s);
void cf_err_dec(uint64_t v);
void cf_err_hex(uint64_t v);

/* Write all of buf to fd (restarting short writes); false on error. */
bool cf_write_all(int fd, const void *buf, size_t len);

#endif /* CF_UTIL_H */
