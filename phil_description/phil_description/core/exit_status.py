"""Exit statuses the nodes and the launcher agree on."""

#: A node whose configuration (a parameter, the model) was refused while it was being built
#: (sysexits' EX_CONFIG): it printed one line saying what and why, and the launcher stops the
#: whole graph, before anything had torque.
CONFIG_ERROR_EXIT = 78
