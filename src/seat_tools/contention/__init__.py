"""How DynamoDB on AWS contends, modelled: transaction conflicts, per-partition throughput, latency.

`model` is pure (no I/O; an injectable clock); the local stack's proxy and the simulation use it.
"""
