//! steady-server: see ../shared/DESIGN.md; filled by the issues that build this layer.
