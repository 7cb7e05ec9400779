"""Matplotlib figures for evalmix results, one module per method area."""
