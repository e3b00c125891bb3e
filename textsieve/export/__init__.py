"""Exports to other tools' layouts: RPv2's signal records and cluster files (`rpv2`)."""
