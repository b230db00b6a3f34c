"""Phil bringup package."""
