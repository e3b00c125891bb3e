"""Text kernels: normalization, Unicode property tables, per-batch views and the numba kernels
behind the raw-text scan and the word statistics."""
