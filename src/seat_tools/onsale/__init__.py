"""`seats onsale plan` and `seats onsale check`: what an on-sale of a given rate needs, and whether a
deployed stack has it (docs/guides/size-a-sale.md)."""
