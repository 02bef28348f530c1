"""Constraint projections as pure functions: positions in, corrected in place; no solver state.

* :mod:`.distance`: stretch and shear (PBD and XPBD), Müller et al. 2006, Macklin et al. 2016.
* :mod:`.bend`: the signed dihedral angle, its gradient and the bend projections.
* :mod:`.tether`: long range attachments, Kim et al. 2012.
* :mod:`.strain_limit`: an upper bound on each mesh edge's stretch, Provot 1995.
* :mod:`.batches`: colors cut into batches, flat gather indices into (3, N) positions.
"""
