"""Real tokenizers: loading tokenizer.json / tiktoken files, counting and encoding, training a BPE."""
