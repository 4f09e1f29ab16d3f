"""Overlay package: this fork's modules first, then the installed rlinf==0.3.0 (see rlinf/_overlay.py)."""

from rlinf._overlay import mount_installed

mount_installed(globals())
del mount_installed
