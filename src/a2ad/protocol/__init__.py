"""Wire formats: the internal model, the 1.0 and 0.3 codecs, JSON-RPC, errors."""
