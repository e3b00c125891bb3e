"""Stages of the training end: decontamination, PII, token counts, the token-ratio mix."""
