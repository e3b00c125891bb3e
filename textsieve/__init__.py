"""textsieve: curate LLM pre-training text with RedPajama-V2 quality signals, dedup and selection."""

__version__ = "0.1.0"
