"""A standalone C reproducer for one prober case: render(case) -> the C text.

The file needs only libc and builds with plain `gcc -static` for any Linux target. It sets
up the case's user buffer (ending at an inaccessible page) and kernel object exactly as the
prober does (kernel/prober/calls.c: the same patterns, placement and pre-filled object),
makes the one call, checks the same contract (kernel/prober/check.c; docs/formats.md,
"Prober cases and lines"), prints what it expected and what happened, and exits 1 when
the contract is broken (a hang: "did not return in 10 s"), 0 when not, 2 when set-up failed.

`selftest_break` (tests only) corrupts the observation after the call as the prober's
--selftest-break does, to prove the reproducer's checks can fail.
"""

from __future__ import annotations

from .casedef import PIPE_CHUNK, Case, definition

TIMEOUT = 10

_CALLS = {
    "write": "write(fd, bp[0], N)", "pwrite64": "pwrite(fd, bp[0], N, KOFF)", "writev": "writev(fd, iov, SEGS)",
    "read": "read(fd, bp[0], N)", "pread64": "pread(fd, bp[0], N, KOFF)", "readv": "readv(fd, iov, SEGS)",
    "pipe_write": "write(pf[1], bp[0], N)", "pipe_read": "read(pf[0], bp[0], N)",
    "sendto": "sendto(tx, bp[0], N, 0, (struct sockaddr *)&sa, sizeof(sa))",
    "recvfrom": "recvfrom(rx, bp[0], N, 0, (struct sockaddr *)&from, &fl)",
}

_SETUP = {
    "file": """  int fd = open("cf-repro-file", O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || pwrite(fd, kb, KOFF + N + 16, 0) != KOFF + N + 16) die("file");
  unlink("cf-repro-file");
  if (lseek(fd, KOFF, SEEK_SET) != KOFF) die("lseek");""",
    "pipe": """  int pf[2], avail = 0;
  if (pipe(pf) || fcntl(pf[1], F_SETPIPE_SZ, KOFF + N + 2 * PG) < 0) die("pipe");
  if (write(pf[1], kb, TO_USER ? KOFF + N : KOFF) != (TO_USER ? KOFF + N : KOFF)) die("pipe fill");
  if (TO_USER && read(pf[0], got, KOFF) != KOFF) die("pipe read-away");""",
    "udp": """  struct sockaddr_in sa = {.sin_family = AF_INET}, from; socklen_t fl = sizeof(sa);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
  struct pollfd pl = {.fd = rx, .events = POLLIN};
  (void)from;
  if (rx < 0 || tx < 0 || bind(rx, (struct sockaddr *)&sa, sizeof(sa)) || getsockname(rx, (struct sockaddr *)&sa, &fl))
    die("udp on 127.0.0.1 (is lo up?)");
  if (TO_USER && (sendto(tx, kb, N, 0, (struct sockaddr *)&sa, sizeof(sa)) != N || poll(&pl, 1, 2000) != 1))
    die("udp datagram");""",
}

# observation and the destination's checks, per (direction, object)
_CHECK = {
    ("to_kernel", "file"): """  struct stat sb; if (fstat(fd, &sb)) die("fstat");
  long len = pread(fd, got, sizeof(got), 0);
  /*FLIP*/
  if (sb.st_size != KOFF + N + 16) bad |= note("store-beyond-reported", "size", (long)sb.st_size, KOFF + N + 16);
  for (long j = 0; j < len; j++) {
    int in = j >= KOFF && j < KOFF + good;
    if (j >= KOFF + good && j < KOFF + k) continue;
    if (got[j] != (in ? u(j - KOFF) : kp(j)))
      bad |= note(in ? "wrong-data" : "store-beyond-reported", "file_off", j, in ? u(j - KOFF) : kp(j));
  }""",
    ("to_kernel", "pipe"): """  long len = ioctl(pf[0], FIONREAD, &avail) ? -1 : read(pf[0], got, avail);
  if (len < 0) len = 0;
  /*FLIP*/
  for (long j = 0; j < len && j < KOFF + good; j++)
    if (got[j] != (j < KOFF ? kp(j) : u(j - KOFF))) { bad |= note("wrong-data", "pipe_off", j, got[j]); break; }
  if (len != KOFF + k)
    bad |= note(len < KOFF + k ? "wrong-data" : "store-beyond-reported", "pipe_len", len, KOFF + k);""",
    ("to_kernel", "udp"): """  poll(&pl, 1, ret >= 0 ? 1000 : 0);
  long len = recv(rx, got, sizeof(got), MSG_DONTWAIT | MSG_TRUNC), extra = 0;
  while (len >= 0 && recv(rx, NULL, 0, MSG_DONTWAIT | MSG_TRUNC) >= 0) extra++;
  /*FLIP*/
  if (ret == -1 && len >= 0) bad |= note("store-beyond-reported", "delivered", len, -1);
  if (ret == N && len != N) bad |= note("wrong-data", "delivered", len, N);
  for (long j = 0; ret == N && len == N && j < good; j++)
    if (got[j] != u(j)) { bad |= note("wrong-data", "at", j, u(j)); break; }
  if (extra) bad |= note("store-beyond-reported", "extra_datagrams", extra, 0);""",
}
_CHECK_TO_USER = """  for (long i = 0; i < N; i++) {
    unsigned char *p = NULL, src = kp(KOFF + i);
    for (int s = 0; s < SEGS; s++)
      if (i >= st[s] && i < st[s] + ln[s] && !(s == fs && ACC < N && i >= ACC)) p = bp[s] + (i - st[s]);
    if (!p) continue;
    if (i < good && *p != src) bad |= note("wrong-data", "at", i, src);
    if (i >= k && *p != u(i) && (OBJ_FILE || *p != src)) bad |= note("store-beyond-reported", "at", i, *p);
  }
  for (long j = 0; ACC == N && j < GAP; j++)
    if (b[(long)j - GAP] != u(N + j)) bad |= note("store-beyond-reported", "past_n", j, 0);
  for (long j = 0; RO && j < PG; j++)
    if (b[j] != u(j)) { bad |= note("store-beyond-reported", "ro_page", j, b[j]); break; }"""
_LOST = """  long left = ioctl(pf[0], FIONREAD, &avail) ? -1 : read(pf[0], got, avail), lost = left != N - k;
  for (long j = 0; !lost && j < left; j++) lost = got[j] != kp(KOFF + k + j);
  if (lost) bad |= note("lost-data", "left", left, N - k);"""

_BREAK = {
    "bad-return": "ret = N + 1;",
    "spurious-fault": "if (ACC == N && N >= 1) ret = N - 1;",
    "over-report": "if (ACC < N) ret = ACC + 1;",
    "no-progress": "if (N >= 1 && ACC >= THRESH) ret = -1, err = EFAULT;",
}

_CONTRACT = {
    "file": "a file call returns k, 0 <= k <= acc, -1/EFAULT only when acc == 0 (n >= 1), n when acc == n; "
            "the destination holds the first k source bytes and nothing else changed",
    "pipe": "a pipe call returns k, 0 <= k <= acc, n when acc == n, and must make progress once acc >= "
            f"min(n, {PIPE_CHUNK}) (Linux drops a pipe-page chunk whose copy faults); the pipe holds exactly "
            "what was reported",
    "udp": "a datagram is all or nothing: n when acc == n (exactly that datagram), else -1/EFAULT and "
           "nothing delivered (recvfrom: nothing stored past acc)",
}


def render(case: Case, selftest_break: str | None = None) -> str:
    """The reproducer's C text for case (tests: selftest_break = a class to fake)."""
    s = case.info
    classes = [c.name for c in definition().classes]
    if selftest_break is not None and selftest_break not in classes:
        raise ValueError(f"{selftest_break}: not a finding class")
    to_user = s.direction == "to_user"
    thresh = 1 if s.object == "file" else min(case.n, PIPE_CHUNK) if s.object == "pipe" else case.n
    check = _CHECK_TO_USER if to_user else _CHECK[(s.direction, s.object)]
    if case.syscall == "pipe_read":
        check += "\n" + _LOST
    brk = _BREAK.get(selftest_break or "", "")
    if selftest_break == "wrong-data":
        brk = "if (ret >= 1 && ACC >= 1) " + ("bp[0][0] ^= 0x80;" if to_user else "flip = 1;")
    elif selftest_break:
        brk = brk or f'printf("selftest: {selftest_break} not faked here\\n");'
    headers = ["errno", "fcntl", "signal", "stdio", "stdlib", "string", "sys/mman", "sys/uio", "unistd"]
    headers += {"file": ["sys/stat"], "pipe": ["sys/ioctl"], "udp": ["arpa/inet", "netinet/in", "poll", "sys/socket"]}[
        s.object]
    at = "0" if s.object == "udp" else "KOFF"  # what was read back, corrupted as the prober does
    if case.acc == case.n:
        expect = f"{case.n}"
    elif s.object == "udp":
        expect = "-1/EFAULT, nothing delivered"
    elif case.acc >= thresh:
        expect = f"1..{case.acc}"
    elif case.acc == 0:
        expect = "0 or -1/EFAULT"
    else:
        expect = f"0..{case.acc} or -1/EFAULT"
    check = check.replace("/*FLIP*/", f"if (flip && len > {at}) got[{at}] ^= 0x80;")
    return f"""/* copyfuzz reproducer (generated by tool/copyfuzz/kernel/reproducer.py): {case.spec()}
 * {s.name}: {s.direction}, {s.object}; n={case.n} bytes, the first acc={case.acc} accessible, then a
 * {'read-only' if case.prot == 'ro' else 'PROT_NONE'} page; koff={case.koff}, segs={case.segs}, gap={case.gap}.
 * Contract: {_CONTRACT[s.object]}.
 * Build: gcc -static -O2 -o repro repro.c; run in a tmpfs directory. Exit 0: the contract
 * holds; 1: it is broken (or the call hung); 2: set-up failed. */
#define _GNU_SOURCE
{chr(10).join(f"#include <{h}.h>" for h in headers)}
#define N {case.n}L
#define ACC {case.acc}L
#define KOFF {case.koff}L
#define SEGS {case.segs}
#define GAP {case.gap}
#define RO {int(case.prot == 'ro')}
#define TO_USER {int(to_user)}
#define OBJ_FILE {int(s.object == 'file')}
#define THRESH {thresh}L
#define PG 4096L
static unsigned char u(long i) {{ return (unsigned char)((((unsigned)i * 2654435761u) >> 24) | 1u); }}
static unsigned char kp(long j) {{ return (unsigned char)((((unsigned)j * 2246822519u) >> 24) & 0xfeu); }}
static void die(const char *what) {{ perror(what); exit(2); }}
static void hung(int sig)
{{ static const char m[] = "did not return in {TIMEOUT} s: hang\\n";
  (void)sig; _exit(1 | (write(1, m, sizeof(m) - 1) < 0)); }}
static int note(const char *cls, const char *what, long a, long b)
{{ static int shown; if (shown++ < 8) printf("%s: %s=%ld (%ld)\\n", cls, what, a, b); return 1; }}
static unsigned char kb[KOFF + N + 16 + PG], got[KOFF + N + 16 + 65536];
int main(void)
{{
  long ab = (N + 8 + 2 * PG - 1) / PG * PG, ol = (N + 65 * 4 + PG - 1) / PG * PG;
  unsigned char *r = mmap(0, ab + 3 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  unsigned char *o = mmap(0, ol + 2 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *b = r + PG + ab, *bp[4];
  if (r == MAP_FAILED || o == MAP_FAILED || mprotect(r + PG, ab, PROT_READ | PROT_WRITE) ||
      mprotect(o + PG, ol, PROT_READ | PROT_WRITE)) die("mmap");
  if (RO && mprotect(b, PG, PROT_READ | PROT_WRITE)) die("mprotect");
  for (long j = 0; RO && j < PG; j++) b[j] = u(j);
  if (RO && mprotect(b, PG, PROT_READ)) die("mprotect");
  long st[4], ln[4], each = N / SEGS, fs = SEGS - 1, flip = 0; struct iovec iov[4];
  for (int i = 0; i < SEGS; i++) st[i] = each * i, ln[i] = i + 1 < SEGS ? each : N - each * i;
  for (int i = SEGS - 1; i >= 0 && ACC < N; i--) if (ACC >= st[i] && ACC < st[i] + ln[i]) fs = i;
  for (int i = 0; i < SEGS; i++) {{ /* the faulting segment ends at the page b; the others in o */
    long have = i != fs ? ln[i] : ACC < N ? ACC - st[i] : ln[i];
    bp[i] = i != fs ? o + PG + st[i] + 65 * i : ACC < N ? b - have : b - ln[i] - GAP;
    for (long j = 0; j < have; j++) bp[i][j] = u(st[i] + j);
    iov[i].iov_base = bp[i], iov[i].iov_len = ln[i];
  }}
  for (long j = 0; ACC == N && j < GAP; j++) b[j - GAP] = u(N + j);
  for (long j = 0; j < KOFF + N + 16; j++) kb[j] = kp(j);
{_SETUP[s.object]}
  signal(SIGALRM, hung); alarm({TIMEOUT});
  errno = 0;
  long ret = {_CALLS[case.syscall]};
  int err = ret < 0 ? errno : 0, bad = 0;
  alarm(0);
  (void)iov, (void)flip, (void)got;
  {brk}
  long k = ret < 0 ? 0 : ret > N ? N : ret, good = k < ACC ? k : ACC;
  printf("{case.spec()}: expected ret {expect}; returned %ld errno %d\\n", ret, err);
  if (ret < -1 || ret > N || (ret == -1 && err != EFAULT) || ({int(s.object == 'udp')} && ret >= 0 && ret != N))
    bad |= note("bad-return", "ret", ret, N);
  else if ((N >= 1 && ACC == N && ret != N) || k > ACC)
    bad |= note(k > ACC ? "over-report" : "spurious-fault", "ret", ret, ACC);
  if (N >= 1 && ACC >= THRESH && (ret == 0 || ret == -1)) bad |= note("no-progress", "ret", ret, THRESH);
{check}
  printf("%s\\n", bad ? "contract broken" : "contract holds");
  return bad;
}}
"""
