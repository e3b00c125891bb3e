"""HTML to clean text: charset decoding (`decode`), main-content extraction engines (`engines`)
and optional mojibake repair (`fixtext`). A domain package: it knows pages, not stages, so the
`extract` stage, the Python API and the benchmarks share one implementation."""
