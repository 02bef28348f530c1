"""Self-collision: closest points, candidate lists, the narrow phase and its fail-safe."""
