"""Names of the graph's nodes that other nodes address."""

HARDWARE_NODE = '/hardware'
PLANNER_NODE = '/behavior_planner'
#: The nodes a motion needs, besides the planner.
MOTION_PATH = (HARDWARE_NODE, '/trajectory_generator', '/score_player')
