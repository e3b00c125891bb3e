"""Benchmark decontamination: n-gram overlap of documents with evaluation data (`textsieve decontaminate`)."""
