"""Learned quality filters: features from stored signals (`features`) and the logistic model
`textsieve learn` trains and recipes use as `NAME.predict` (`model`)."""
