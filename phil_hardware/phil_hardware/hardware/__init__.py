"""hardware: the lifecycle node that owns the buses through the bus loop."""
