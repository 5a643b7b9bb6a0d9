"""Each architecture of targets.ARCHES has what the tool looks up by its name (issue 28
point 3: an architecture is one row): its decoder, decode/<arch>.py."""

from __future__ import annotations

import pytest
from copyfuzz import decode, targets
from copyfuzz.errors import CopyfuzzError


@pytest.mark.parametrize("arch", list(targets.ARCHES))
def test_every_architecture_has_its_decoder(arch: str) -> None:
    isa = decode.for_arch(arch)
    assert isa.name == arch
    assert isa.sp in isa.regs and set(isa.args) <= set(isa.regs)


def test_an_unknown_architecture_has_no_decoder() -> None:
    with pytest.raises(CopyfuzzError, match=r"unknown architecture 'mips' \(known: riscv, arm64, arm\)"):
        decode.for_arch("mips")
