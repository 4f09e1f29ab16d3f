"""``rlinf.envs``, overlaid: this fork's modules first, then the installed ones (see rlinf/_overlay.py)."""

from rlinf._overlay import mount_installed

mount_installed(globals())
del mount_installed
