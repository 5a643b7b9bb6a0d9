/* SPDX-License-Identifier: MIT */
#include "util.h"

#include "sys.h"

size_t cf_strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

bool cf_streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

bool cf_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0, base = 10;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		base = 16, s += 2;
	if (!*s)
		return false;
	for (; *s; s++) {
		uint64_t d;
		if (*s >= '0' && *s <= '9')
			d = (uint64_t)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (uint64_t)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (uint64_t)(*s - 'A' + 10);
		else
			return false;
		if (v > (UINT64_MAX - d) / base)
			return false;
		v = v * base + d;
	}
	*out = v;
	return true;
}

bool cf_write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		long w = cf_write(fd, p, len);
		if (w == -4 /* EINTR */)
			continue;
		if (w <= 0)
			return false;
		p += w;
		len -= (size_t)w;
	}
	return true;
}

static uint8_t out_buf[1 << 16];
static size_t out_len;
int cf_out_fd = 1;

void cf_out_flush(void)
{
	if (out_len && !cf_write_all(cf_out_fd, out_buf, out_len))
		cf_exit(3); /* the reader is gone: nothing left to do */
	out_len = 0;
}

void cf_out(const void *p, size_t len)
{
	const uint8_t *s = p;
	if (out_len + len > sizeof(out_buf))
		cf_out_flush();
	if (len > sizeof(out_buf)) {
		if (!cf_write_all(cf_out_fd, s, len))
			cf_exit(3);
		return;
	}
	for (size_t i = 0; i < len; i++)
		out_buf[out_len + i] = s[i];
	out_len += len;
}

void cf_out_str(const char *s)
{
	cf_out(s, cf_strlen(s));
}

static size_t fmt_u64(char *buf, uint64_t v, unsigned base)
{
	char tmp[24];
	size_t n = 0, k = 0;
	do {
		unsigned d = (unsigned)(v % base);
		tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
		v /= base;
	} while (v);
	while (n)
		buf[k++] = tmp[--n];
	buf[k] = 0;
	return k;
}

void cf_out_hex(uint64_t v)
{
	char b[24] = "0x";
	fmt_u64(b + 2, v, 16);
	cf_out_str(b);
}

void cf_out_dec(uint64_t v)
{
	char b[24];
	fmt_u64(b, v, 10);
	cf_out_str(b);
}

void cf_err(const char *s)
{
	cf_write_all(2, s, cf_strlen(s));
}

void cf_err_dec(uint64_t v)
{
	char b[24];
	fmt_u64(b, v, 10);
	cf_err(b);
}

void cf_err_hex(uint64_t v)
{
	char b[24] = "0x";
	fmt_u64(b + 2, v, 16);
	cf_err(b);
}
