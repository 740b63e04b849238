"""The shop: the catalog, configure and its instant quote, accept, the anonymous estimate and
the sizing wizard."""
