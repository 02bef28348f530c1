"""Reading and writing cloth meshes and caches."""
