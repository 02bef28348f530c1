"""The Warp backend: the numpy backend's colored solve as NVIDIA Warp kernels (CPU and CUDA).

Importing this package needs ``warp-lang``; :func:`pbdcloth.solver.make_backend` imports it only
when the settings ask for Warp.
"""
