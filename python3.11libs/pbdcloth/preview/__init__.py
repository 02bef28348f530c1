"""Pictures of runs and caches (matplotlib, imported on first use).

- :mod:`.render`: :func:`render_frame` draws one frame (cloth coloured by strain, colliders at
  their pose, pins) into a 3D axes; named views; the strain colour bar.
- :mod:`.shapes`: colliders as drawable shapes at one pose (no matplotlib).
- :mod:`.sheet`: contact sheets, movie frames, movies; per-point strain of frames.
- :mod:`.plots`: per-frame curves of a run's log; spring-chain paths.
"""

from .plots import PLOT_PANELS, paths_picture, plot_log
from .render import (
    DEFAULT_VIEW,
    VIEWS,
    ViewError,
    add_strain_colorbar,
    parse_view,
    point_max_strain,
    render_frame,
)
from .shapes import Shape, shapes_of
from .sheet import (
    contact_sheet,
    frame_strain,
    render_frames,
    save_figure,
    sheet_figure,
    write_movie,
)

__all__ = [
    "DEFAULT_VIEW", "PLOT_PANELS", "VIEWS", "Shape", "ViewError", "add_strain_colorbar",
    "contact_sheet", "frame_strain", "parse_view", "paths_picture", "plot_log",
    "point_max_strain", "render_frame", "render_frames", "save_figure", "shapes_of", "sheet_figure",
    "write_movie",
]
