"""description_publisher: the latched robot description and drum-kit markers."""
