"""Overlay package: this fork's modules first, then the installed rlinf==0.3.0 (see rlinf/_overlay.py).

It also installs the import hook that gives RLinf's OpenVLA-OFT path its ``prismatic`` (see
rlinf/_prismatic_source.py) in every process that imports rlinf, Ray workers included.
"""

from rlinf._overlay import mount_installed
from rlinf._prismatic_source import install as _install_prismatic_source

_install_prismatic_source()
mount_installed(globals())
del mount_installed
