"""Exit statuses and signals the nodes and the launcher agree on."""

import signal

#: A node whose configuration (a parameter, the model) was refused while it was being built
#: (sysexits' EX_CONFIG): it printed one line saying what and why, and the launcher stops the
#: whole graph, before anything had torque.
CONFIG_ERROR_EXIT = 78

#: A node given this signal prints every thread's stack to its stderr (its log) and runs on:
#: the launcher sends it to a node that does not exit after QUIT before stopping it, so the log
#: says where it hung (faulthandler's handler runs in C, even while a thread holds the GIL).
STACK_DUMP_SIGNAL = signal.SIGUSR1
