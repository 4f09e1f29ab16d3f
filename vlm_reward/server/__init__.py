"""The reward server: command line, HTTP app and its guards, the scoring service.

Started with ``python -m vlm_reward.libero_reward_server``; nothing here is imported by the
client. Importing this package imports nothing heavy (torch, transformers and vLLM load in a
backend's ``load``).
"""
