"""What a person reads: documents, figures and the terminal table.

- :mod:`.document`: a block model rendered to Markdown and to standalone HTML;
- :mod:`.evaluation`: the evaluation report (``summary.json``, ``report.md``, ``report.html``);
- :mod:`.table`: the short terminal table and the number formats;
- :mod:`.plots`: its PNG figures and the disagreement frame strips;
- :mod:`.audit`: the judge audit's section, its own report and its filmstrips;
- :mod:`.comparison`: ``compare.png`` and ``compare.md`` of two training runs.
"""
