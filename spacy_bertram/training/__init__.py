"""Training BERTRAM offline: the corpus and its context store (`prepare`), training words and their
targets (`targets`), the stages (`train`), and vector tables on Dask (`vectors`). The runtime plugin
never imports this package."""
