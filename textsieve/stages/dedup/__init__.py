"""Stages of deduplication: exact, MinHash-LSH, CCNet lines, semantic."""
