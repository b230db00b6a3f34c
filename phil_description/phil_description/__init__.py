"""Phil description package: URDF, kit, poses and the robot model API."""
