"""Personal data in text: detectors for span signals and their redaction (`textsieve pii`, `select --redact`)."""
