"""The forecast stage: classical forecasters beside the search, the weighing, the steps past the data."""
