"""evalmix inside evaluation harnesses (imported only by the harness that loads them)."""
