"""DSIR (Xie et al. 2023): hashed n-gram features, the target/raw importance model, the
target-list parser and Gumbel top-k resampling. The `dsir fit` stage lives in
`textsieve.stages.select.dsir_fit`; `select --dsir` resamples through `resample`.
"""
