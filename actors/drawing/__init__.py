"""Pictures of workflows, plans and pipelines (``ontoflow graph``), with the checker's
findings and a journaled run's path on them: Mermaid and DOT text, SVG and PNG through
Graphviz."""

from ontoflow.actors.drawing._dot import to_dot
from ontoflow.actors.drawing._mermaid import to_mermaid
from ontoflow.actors.drawing._overlay import OverlayStep, RunOverlay, overlay_from_journal, overlay_from_state
from ontoflow.actors.drawing._render import FORMATS, GRAPHVIZ_HINT, render
from ontoflow.actors.drawing._scene import Scene, SceneEdge, SceneNode, plan_scene, scene_of, workflow_scene
from ontoflow.actors.drawing.errors import DrawingError, GraphvizMissingError, RunNotFoundError

__all__ = [
    "DrawingError",
    "FORMATS",
    "GRAPHVIZ_HINT",
    "GraphvizMissingError",
    "OverlayStep",
    "RunNotFoundError",
    "RunOverlay",
    "Scene",
    "SceneEdge",
    "SceneNode",
    "overlay_from_journal",
    "overlay_from_state",
    "plan_scene",
    "render",
    "scene_of",
    "to_dot",
    "to_mermaid",
    "workflow_scene",
]
