"""Examples that run RLinf with this fork's env; only ``embodiment`` so far."""
