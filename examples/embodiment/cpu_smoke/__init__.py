"""The CPU smoke run's scaffolding (``run_embodiment.sh --cpu-smoke``), apart from what GPU runs load.

- :mod:`.guard`: the driver's supervision: settings from ``cpu_smoke:``, hook check, watchdog, timeout
  (also of ``--cpu-learn`` runs); :mod:`.ray_watch`: what the watchdog asks of Ray;
- :mod:`.cpu_platform`: the CPU platform hook RLinf's workers load (``RLINF_EXT_MODULE``);
- :mod:`.actor`: the FSDP actor that records the GRPO batch and logprobs for the checks;
- :mod:`.model`: the smoke run's policy: the tiny checkpoint built, or a given one checked;
- :mod:`.tiny_openvla_oft`: the random-weight OpenVLA-OFT built offline (also the tests' checkpoint).

``train_embodied_agent.py`` imports these only when ``cpu_smoke.enable`` is set; the checkpoint
checks (``oft_checkpoint.py``) stay beside it, since ``--dry-run`` uses them too.
"""
