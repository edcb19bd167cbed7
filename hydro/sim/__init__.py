"""Simulation and sensing: the penalty solver (``simulation``, with ``friction`` and
``kinematics``), the solver-to-sensor interface (``sensing``: ``ContactFrame``, ``on_step``),
Isaac Lab– and EmbodiChain-style contact sensors (``sensors``, ``embodichain``; Isaac Lab's scene
classes in ``interactive_scene``), their buffers with ``.torch`` views (``arrays``), and Isaac
Sim's ``launch_count_contacts_per_pair`` / ``launch_contact_data`` (``contact_data``: contact
data per sensor/filter pair from a Newton-layout buffer, CPU and CUDA)."""
