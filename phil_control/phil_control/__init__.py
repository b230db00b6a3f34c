"""Phil control package."""
