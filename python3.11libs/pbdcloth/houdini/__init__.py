"""The Houdini layer: cook functions of the pbdcloth asset's Python SOPs and their helpers.

This is the only part of pbdcloth that talks to Houdini. It imports ``hou`` inside its functions,
so the package imports (and its declarations can be used, e.g. by ``scripts/build_hda.py``)
without Houdini; the cook functions themselves run inside Houdini (or hython).

* :mod:`.operators` - the operators and their parameters, as data.
* :mod:`.sops` - the cook functions the HDA's cook sections call.
* :mod:`.geometry` - hou.Geometry <-> numpy in bulk; detail arrays; pin groups.
* :mod:`.vdb` - VDB signed distance fields -> colliders, read in voxel blocks.
* :mod:`.parms` - parameter values by their declarations.
* :mod:`.hda` - the expanded asset library's text, generated from the declarations.
"""
