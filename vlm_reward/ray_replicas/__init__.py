"""Judge replicas that Ray places, restarts and stops, on the training's or a local cluster.

The Ray cluster runs the reward servers instead of a person starting one per node.

- :mod:`.config`: the typed ``reward_server`` block (which judge, how many, what each holds);
- :mod:`.plan`: pure: one slot per replica (node, GPUs) and the checks against the cluster;
- :mod:`.replica`: one replica: a reward server process supervised by a Ray actor;
- :mod:`.group`: the replicas as Ray actors: start, wait until healthy, drain and stop.

Only :mod:`.group` and :mod:`.replica` (inside the actor) import Ray, and nothing here imports
``rlinf``: the training entry reads RLinf's placement into slots
(``examples/embodiment/judge_replicas.py``).
"""
