"""Running scenes: scene files, the run loop, checkpoints, progress and post-processing."""
