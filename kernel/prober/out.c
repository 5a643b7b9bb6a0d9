/* SPDX-License-Identifier: MIT */
/*
 * out.c - the line protocol on stdout: "CF <type> key=value ... #<crc32>", crc32 (zlib's)
 * of everything before " #" as 8 lowercase hex digits. Kernel messages may interleave on
 * a console: the host keeps only lines whose checksum holds. Each line is one write(2),
 * so none is held in a buffer when the prober dies or the VM powers off.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "prober.h"

uint32_t cf_crc32(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint32_t crc = 0xffffffffu;
	for (size_t i = 0; i < len; i++) {
		crc ^= b[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

char *cf_pct(const char *text, char *buf, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t at = 0;
	for (const unsigned char *p = (const unsigned char *)text; *p && at + 4 < len; p++) {
		if (*p <= ' ' || *p >= 0x7f || *p == '%' || *p == '#') {
			buf[at++] = '%';
			buf[at++] = hex[*p >> 4];
			buf[at++] = hex[*p & 15];
		} else {
			buf[at++] = (char)*p;
		}
	}
	buf[at] = 0;
	return buf;
}

void cf_line(const char *type, const char *fmt, ...)
{
	char line[2048];
	int at = snprintf(line, sizeof(line) - 16, "CF %s ", type);
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(line + at, sizeof(line) - 16 - (size_t)at, fmt, ap);
	va_end(ap);
	if (w < 0)
		w = 0;
	at += w;
	if (at > (int)sizeof(line) - 17)
		at = (int)sizeof(line) - 17;
	while (at > 0 && line[at - 1] == ' ')
		at--; /* no fields: no trailing space */
	at += snprintf(line + at, 16, " #%08x\n", cf_crc32(line, (size_t)at));
	const char *p = line;
	while (at > 0) {
		ssize_t r = write(1, p, (size_t)at);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		p += r;
		at -= (int)r;
	}
}
