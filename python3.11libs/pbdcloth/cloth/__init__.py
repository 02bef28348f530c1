"""The cloth itself: input mesh, topology, constraint coloring, the static model and its state."""
