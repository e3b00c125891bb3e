"""Source dumps in their native formats, read into documents: code repositories, arXiv source
tars, Wikipedia XML dumps, StackExchange Posts.xml, books.

RedPajama-1T built five of its seven sources from such dumps with per-source scripts (the
`rp_v1` branch of RedPajama-Data); each family here reads what those scripts read, and
reproduces their whole recipe exactly in reference mode (`--reference rp_v1`). Each family is
one module that registers itself (`family.register_family`); the `source` stage
(`stages.sources.source`) runs any of them.
"""
