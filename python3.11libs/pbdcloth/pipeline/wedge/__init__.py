"""Wedges: the same scene simulated with settings varied over lists, many runs at once on Dask.

:mod:`.plan` turns ``--vary NAME=V1,V2`` (or a scene's ``[wedge]`` table) into the checked list
of members, each a ``pbdcloth simulate`` of the scene with some settings changed, into its own
folder ``DIR/w0003_bend_stiffness=0.05_friction=0.6/``; :mod:`.execute` runs one member (the
task a Dask worker runs) and the whole wedge on an embedded ``LocalCluster`` or an existing
Dask scheduler; :mod:`.results` writes ``wedge.csv``, ``wedge.json`` and ``wedge.png``.

Dask (``pip install 'pbdcloth[dist]'``) is imported only by :func:`.execute.run_wedge` when it
runs on a cluster; planning, serial runs and results need none of it.
"""

from .execute import WedgeResult, run_member, run_wedge
from .plan import MAX_MEMBERS, Axis, Member, WedgeError, WedgePlan, plan_wedge

__all__ = ["MAX_MEMBERS", "Axis", "Member", "WedgeError", "WedgePlan", "WedgeResult",
           "plan_wedge", "run_member", "run_wedge"]
