"""`seats simulate`: the service's own logic at AWS scale, on a virtual clock (docs/simulation.md)."""
