"""Mixing selections at token shares into shuffled, training-ready shards (`textsieve mix`)."""
