"""Collision geometry: shape types, exact primitive distances, mesh distances (BVH)."""

from .primitives import (BOX, CAPSULE, CONE, CONVEX_MESH, CYLINDER, ELLIPSOID, HEIGHTFIELD, KIND_NAMES, MESH, PARAM_COUNT,
                         PLANE, SPHERE, box_phi, capsule_phi, cone_phi, cylinder_phi, ellipsoid_phi, primitive_phi,
                         sphere_phi)
from .shapes import Box, Capsule, Cone, Cylinder, Ellipsoid, Geometry, Heightfield, Mesh, Plane, Sphere, parse_shape
from .convex import ConvexMesh

__all__ = [
    "Geometry", "Sphere", "Box", "Capsule", "Cylinder", "Cone", "Ellipsoid", "Mesh", "ConvexMesh", "Plane", "Heightfield",
    "parse_shape", "primitive_phi", "sphere_phi", "box_phi", "capsule_phi", "cylinder_phi", "cone_phi",
    "ellipsoid_phi", "KIND_NAMES", "PARAM_COUNT", "SPHERE", "BOX", "CAPSULE", "CYLINDER", "CONE", "ELLIPSOID",
    "MESH", "PLANE", "HEIGHTFIELD", "CONVEX_MESH",
]
