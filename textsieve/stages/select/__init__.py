"""Stages of selection: recipes, DSIR fits and resampling, training-ready shards of a selection."""
