"""Simulation and sensing: the penalty solver (``simulation``, with ``friction`` and
``kinematics``), the solver-to-sensor interface (``sensing``: ``ContactFrame``, ``on_step``),
Isaac Lab– and EmbodiChain-style contact sensors (``sensors``, ``embodichain``), and
``launch_contact_data`` (contact data per sensor/filter pair, CPU and CUDA)."""
