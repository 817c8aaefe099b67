"""Presentation: figures, the verdict, the report, comparisons, the command line."""
