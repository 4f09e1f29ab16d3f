"""The documentation site's generated parts: reference pages rendered from the code, at build time.

Each table has one definition in the code and is rendered from it when MkDocs builds the site
(:mod:`.hooks` replaces a page's ``<!-- docgen: NAME -->`` marker), so the docs cannot drift:

- :mod:`.config_table`: the ``reward_model`` block, from the pydantic ``RewardModelConfig``;
- :mod:`.http_api`: the HTTP API, from the server's own OpenAPI schema and the protocol's error table;
- :mod:`.metrics_table`: the Prometheus series, from the server's registry; the env's ``vlm_*`` keys;
- :mod:`.cli_reference`: every command line, from its argparse parser (:mod:`.commands` lists them);
- :mod:`.layout`: the repository's layout map, from each package's and module's docstring.

:mod:`.command_lines` checks the other direction: every command line shown in the docs and the
README uses flags its command accepts. The renderers are pure (definitions in, markdown out).
"""
