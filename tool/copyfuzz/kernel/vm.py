"""One booted kernel under qemu-system: started with the prober's initramfs, its console
read line by line (every line also kept in a console log), ended for good.

    with vm.VM(kernel, initrd, console_log) as machine:
        for line in machine.lines(idle_s=60):   # raises Stalled when nothing comes for idle_s
            ...
    machine.exit_code  # qemu's, once it ended

qemu runs in a process group of its own and dies with the tool (procs.popen); leaving the
`with` kills it whatever happened. The console is the machine's first UART on qemu's
standard output; the prober's lines carry a checksum, so kernel messages interleaved
with them are told apart (casedef.parse_line).
"""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import time
from collections import deque
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Iterator

from .. import procs, targets
from ..errors import CopyfuzzError
from .build import Kernel, boot

MEMORY = "256M"
CPU_CHECK_S = 30  # check_cpu: qemu's start with a stopped machine, on a loaded machine
CPUS = 2  # a second vCPU keeps the prober's watchdog running while a call spins in the kernel


class Stalled(Exception):
    """Nothing came on the console for the idle time."""


def _machine(arch: targets.Arch, cpu: str | None) -> list[str]:
    machine = list(boot(arch).machine)
    if cpu:
        machine[machine.index("-cpu") + 1] = cpu
    return machine


def command(kernel: Kernel, initrd: Path, cpu: str | None = None, append: str = "") -> list[str]:
    b = boot(kernel.arch)
    machine = _machine(kernel.arch, cpu)
    cmdline = f"console={b.console} panic=-1 {append}".strip()
    return [b.qemu_system, *machine, "-m", MEMORY, "-smp", str(CPUS), "-nodefaults", "-display", "none",
            "-chardev", "stdio,id=con,signal=off", "-serial", "chardev:con", "-no-reboot",
            "-kernel", str(kernel.image), "-initrd", str(initrd), "-append", cmdline]


def check_emulator(kernel: Kernel) -> None:
    name = boot(kernel.arch).qemu_system
    if shutil.which(name) is None:
        raise CopyfuzzError(f"{name} not found (Debian: apt-get install "
                            f"{'qemu-system-misc opensbi' if 'riscv' in name else 'qemu-system-arm'})")


def check_cpu(arch: targets.Arch, cpu: str, saved_in: str = "") -> None:
    """The machine takes cpu (a model and its properties), or a CopyfuzzError with qemu's
    reason: asked before a kernel is built, since a model the machine refuses would end,
    minutes later, as a kernel that prints nothing. qemu starts the machine stopped (-S)
    and quits at its monitor's first command. saved_in: the .spec file whose saved
    options gave cpu."""
    b = boot(arch)
    what = f"--cpu {cpu}" + (f" (saved in {saved_in}'s options)" if saved_in else "")
    argv = [b.qemu_system, *_machine(arch, cpu), "-m", MEMORY, "-nodefaults", "-display", "none", "-S",
            "-monitor", "stdio"]
    try:
        proc = subprocess.run(argv, input=b"quit\n", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=CPU_CHECK_S)
    except subprocess.TimeoutExpired:
        raise CopyfuzzError(f"{what}: {b.qemu_system} did not start within {CPU_CHECK_S} s") from None
    except OSError as e:
        raise CopyfuzzError(f"cannot run {b.qemu_system}: {e.strerror or e}") from e
    if proc.returncode != 0:
        said = proc.stderr.decode(errors="replace").strip().splitlines()
        raise CopyfuzzError(f"{what}: {b.qemu_system} {' '.join(b.machine[:2])} refuses it"
                            f" ({said[-1] if said else f'exit status {proc.returncode}'})")


class VM:
    def __init__(self, kernel: Kernel, initrd: Path, console_log: Path, cpu: str | None = None) -> None:
        check_emulator(kernel)
        self.argv = command(kernel, initrd, cpu)
        self.console_log = console_log
        self.tail: deque[str] = deque(maxlen=40)  # the console's last lines, for errors
        self.exit_code: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: BinaryIO | None = None

    def __enter__(self) -> "VM":
        self.console_log.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.console_log, "ab")
        self._log.write(f"$ {' '.join(self.argv)}\n".encode())
        self._proc = procs.popen(self.argv, new_session=True, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self._proc is not None:
            code = procs.kill_group(self._proc) if self._proc.poll() is None else self._proc.wait()
            if self.exit_code is None:
                self.exit_code = code
            if self._proc.stdout:
                self._proc.stdout.close()
            self._proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def lines(self, idle_s: float, first_s: float | None = None) -> Iterator[str]:
        """The console's lines as they come, until qemu ends; Stalled after idle_s seconds
        with no output at all (first_s until the prober's first line: a boot is slower)."""
        assert self._proc is not None and self._proc.stdout is not None and self._log is not None
        fd = self._proc.stdout.fileno()
        os.set_blocking(fd, False)
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_READ)
        pending = b""
        last = time.monotonic()
        limit = first_s if first_s is not None else idle_s
        try:
            while True:
                ready = sel.select(timeout=1.0)
                if not ready:
                    if time.monotonic() - last > limit:
                        raise Stalled(f"no console output for {limit:.0f} s")
                    continue
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                last = time.monotonic()
                self._log.write(chunk)
                pending += chunk
                *done, pending = pending.split(b"\n")
                for raw in done:
                    text = raw.decode(errors="replace").rstrip("\r")
                    self.tail.append(text)
                    if "CF " in text:
                        limit = idle_s
                    yield text
            if pending:
                text = pending.decode(errors="replace").rstrip("\r")
                self.tail.append(text)
                yield text
        finally:
            sel.close()
            self._log.flush()
        self.exit_code = self._proc.wait()

    def last_lines(self, n: int = 15) -> str:
        return "\n".join(list(self.tail)[-n:])
