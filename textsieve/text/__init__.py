"""Text kernels: normalization, Unicode property tables, the batch encodings every kernel takes
(`batch_encoding`), the one WordPunct tokenizer (`wordpunct`), per-batch views and the numba
kernels behind the raw-text scan and the word statistics."""
