"""Deduplication algorithms: MinHash signatures (RPv2-exact and fast), LSH partitions on disk,
connected components, pair verification, exact keys and the Bloom filter. The stages that run
them live in `textsieve.stages`."""
