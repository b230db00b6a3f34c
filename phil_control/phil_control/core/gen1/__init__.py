"""The Gen-1 brain's protocol (TCP 9999; FACTS 9.2), ROS-free: its messages (`messages`), its
commands as this controller's (`commands`) and the state line it reads (`state_report`)."""
