"""`seats simulate`: the service's own logic at AWS scale, on a virtual clock.

See docs/explanation/simulation.md.
"""
