"""The LIBERO env with an opt-in VLM reward, overlaid on the installed ``rlinf.envs.libero``."""

from rlinf._overlay import mount_installed

mount_installed(globals())
del mount_installed
