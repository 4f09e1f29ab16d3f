"""Fine-tuning a judge on simulator-labelled episodes (``reward-eval finetune``), one concept a module.

- :mod:`.split`: which episodes train and which measure, by initial state; class weights (pure);
- :mod:`.dataset`: the examples: kept videos labelled by native success plus counterfactuals,
  re-encoded through one path;
- :mod:`.inputs`: an example as the server shows it, through the server's own steps;
- :mod:`.readout`: the loss on the judge's own probability-mode readout; the class-prior floor;
- :mod:`.lora`: what is trained (LoRA on the family's modules, or every weight) and the merge;
- :mod:`.settings`: the defaults, measured on the tiny judges, and what derives from them (pure);
- :mod:`.trainer`: the loop, its checkpoints and resuming;
- :mod:`.metrics`: a judge's numbers on the held-out examples (pure);
- :mod:`.served_judge`: real reward servers judging the examples (the evaluation commands' code);
- :mod:`.report`: ``finetune.json``, the report page, the terminal table;
- :mod:`.pipeline`: the steps in the order the command runs them.
"""
