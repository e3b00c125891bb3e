"""Stages of annotation: signals, language id, models' predictions, embeddings."""
