"""The development corpus: real public series for tuning the search (``python -m bench.corpus.build``)."""
