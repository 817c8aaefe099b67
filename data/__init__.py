"""The bundled datasets (CSV files and catalog.json); an installed EvoCov finds them as the package ``evocov_data``."""
