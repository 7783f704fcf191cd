"""`seats bench`: the service against the common design, counted from botocore events on the local stack."""
