"""Simulation and sensing: the penalty solver, Isaac Lab– and EmbodiChain-style contact sensors,
and ``launch_contact_data`` (contact data per sensor/filter pair, CPU and CUDA)."""
