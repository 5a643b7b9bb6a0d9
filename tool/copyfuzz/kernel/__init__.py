"""The booted-kernel truth: the prober's case definition and its standalone C reproducers."""
