"""The tools around the service: the `seats` command, the local stack, the simulation, the bench.

They depend on the deployed service (`seat_inventory`) and never the reverse: nothing here ships
in the Lambda functions.
"""
