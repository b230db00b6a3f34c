"""Phil hardware package."""
