"""Reading and writing other tools' layouts: RedPajama-V2's release, Dolma, Hugging Face datasets."""
