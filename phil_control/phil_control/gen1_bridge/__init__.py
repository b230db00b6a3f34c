"""gen1_bridge: the Gen-1 brain's protocol (TCP 9999) in front of the behavior planner."""
