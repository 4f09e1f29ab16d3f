"""Embodied training of OpenVLA-OFT on LIBERO: RLinf's entry point, its YAMLs, scripts and checks."""
