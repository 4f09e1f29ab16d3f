"""How a video VLM is asked and read, for every backend alike.

Prompts as data, answer text -> score, answer-scale scores from logits, and the Qwen-VL
families' differences."""
