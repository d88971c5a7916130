"""Project utilities (copy checks for self-contained model files)."""
