"""The fuzzing engines a campaign runs: libfuzzer, afl, hypothesis (one module each)."""
