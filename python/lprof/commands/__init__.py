"""One module per CLI verb: run (default), view, export."""
