"""Measuring a selection: DSIR's KL reduction (`kl`) and the held-out perplexity of an n-gram
LM trained on it (`lm`), each beside a random selection of the same size."""
