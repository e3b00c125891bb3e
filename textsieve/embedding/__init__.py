"""Document embeddings: the embedding models (a static model shipped in a wheel, Model2Vec and
sentence-transformers folders by path), their inference with the chunk-and-pool rule, and the
stored embedding sets (`sets/embed_<model>`) that semantic dedup, embedding DSIR and learned filters read."""
