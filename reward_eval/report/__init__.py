"""What a person reads: documents, figures and the terminal table.

- :mod:`.document`: a block model rendered to Markdown and to standalone HTML;
- :mod:`.evaluation`: the evaluation report (``summary.json``, ``report.md``, ``report.html``);
- :mod:`.provenance`: where a report's numbers come from, and the random-weight judge's warning;
- :mod:`.disagreements`: the episodes where the VLM and the simulator disagree, with their frames;
- :mod:`.table`: the short terminal table and the number formats;
- :mod:`.plots`: its PNG figures and the disagreement frame strips;
- :mod:`.audit`: the judge audit's section, its own report and its filmstrips;
- :mod:`.comparison`: ``compare.png`` and ``compare.md`` of two training runs.
"""
