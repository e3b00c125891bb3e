"""Stages of where documents come from: extraction from crawls, RPv2 and Dolma imports."""
