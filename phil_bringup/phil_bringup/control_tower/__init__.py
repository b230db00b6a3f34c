"""The control tower: a web page of the running robot (3D, state, hits, controls) that the
graph serves (``control_tower`` node)."""
