"""The VLM judge trained here on simulator labels, shipped with its recipe (:mod:`.recipe`)."""
