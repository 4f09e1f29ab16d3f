"""For running and testing a server, not for serving.

Which Python runs a backend, the server as a child process, and the tiny random-weight
checkpoints built offline."""
