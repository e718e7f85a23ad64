"""Pure logic with no I/O: profile documents, rank fusion, FTS queries, token counting."""
